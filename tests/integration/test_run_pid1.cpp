// `gpureap run` as PID 1 of a new PID namespace, as in a container with
// ENTRYPOINT ["gpureap", "run", "--"]: every orphan's zombie is reaped, and a SIGTERM from
// the parent namespace (`docker stop`) reaches the job.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "support.h"

namespace gpureap::testing {
namespace {

// --kill-child: a failing test must not leave the namespace running.
const std::vector<std::string> kNewPidNamespace{"unshare", "--pid", "--fork", "--mount-proc",
                                                "--kill-child"};

bool pid_namespaces_work() {
  return ::geteuid() == 0 &&
         std::system("unshare --pid --fork --mount-proc true >/dev/null 2>&1") == 0;
}

// A macro: GTEST_SKIP returns only from the function it is written in.
#define SKIP_WITHOUT_PID_NAMESPACES() \
  if (!pid_namespaces_work())         \
  GTEST_SKIP() << "needs root and a permitted unshare --pid --fork --mount-proc"

std::vector<std::string> pid1_run_args(const TempDir& dir, const std::string& script) {
  return {"--nvml-library",
          dir.file("no-such-libnvidia-ml.so.1"),
          "run",
          "--report",
          dir.file("report.json"),
          "--",
          "sh",
          "-c",
          script};
}

// The child of `parent` (unshare's forked child is gpureap, PID 1 inside).
pid_t child_of(pid_t parent) {
  DIR* d = ::opendir("/proc");
  pid_t found = -1;
  while (dirent* e = d ? ::readdir(d) : nullptr) {
    pid_t pid = static_cast<pid_t>(std::atol(e->d_name));
    if (pid <= 0) continue;
    std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
    std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    auto close = s.rfind(')');
    if (close == std::string::npos) continue;
    char state = 0;
    long ppid = 0;
    if (std::sscanf(s.c_str() + close + 1, " %c %ld", &state, &ppid) == 2 && ppid == parent) {
      found = pid;
      break;
    }
  }
  if (d) ::closedir(d);
  return found;
}

TEST(RunPid1, OrphansZombiesAreReaped) {
  SKIP_WITHOUT_PID_NAMESPACES();
  TempDir dir;
  // Each inner sh exits at once, orphaning its sleep to PID 1 (gpureap); when the sleep
  // ends it is a zombie until PID 1 reaps it. The job waits (bounded) for every one of them
  // to vanish from /proc and fails with 1, printing the zombie, if one does not.
  std::string script =
      "pids=''; for i in 1 2 3; do pids=\"$pids $(sh -c 'sleep 0.2 >/dev/null 2>&1 & echo $!')\"; "
      "done; "
      "for p in $pids; do n=0; while [ -e /proc/$p ]; do n=$((n+1)); "
      "if [ $n -gt 400 ]; then cat /proc/$p/stat; exit 1; fi; sleep 0.05; done; done; exit 0";
  BackgroundGpureap gpureap(pid1_run_args(dir, script), {}, kNewPidNamespace);
  auto r = gpureap.wait();
  EXPECT_EQ(r.exit_code, 0) << "an orphan stayed a zombie: " << r.out << r.err;
  auto report = nlohmann::json::parse(read_text(dir.file("report.json")));
  EXPECT_EQ(report["pid1"], true);
  EXPECT_EQ(report["exit"]["status"], 0);
}

TEST(RunPid1, LeftoversAreEndedBeforePid1Exits) {
  SKIP_WITHOUT_PID_NAMESPACES();
  TempDir dir;
  // A reparented orphan still running when the job exits is a leftover like any other.
  // The job waits until the orphan has become `sleep` (a forked child is `sh` until it execs).
  std::string w = dir.file("w");
  std::string script = "sh -c 'sleep 1000 >/dev/null 2>&1 & echo $! > " + w +
                       "'; i=0; while [ \"$(cat /proc/$(cat " + w +
                       ")/comm 2>/dev/null)\" != sleep ] && [ $i -lt 5000 ]; "
                       "do i=$((i+1)); done; exit 0";
  auto gpureap = BackgroundGpureap(pid1_run_args(dir, script), {}, kNewPidNamespace).wait();
  EXPECT_EQ(gpureap.exit_code, 0) << gpureap.err;
  auto report = nlohmann::json::parse(read_text(dir.file("report.json")));
  ASSERT_EQ(report["leftovers"].size(), 1u) << report.dump(2);
  EXPECT_EQ(report["leftovers"][0]["comm"], "sleep");
  EXPECT_EQ(report["leftovers"][0]["signals"][0], "SIGTERM");
  EXPECT_EQ(report["leftovers"][0]["ended"], true);
}

TEST(RunPid1, SigtermFromTheParentNamespaceReachesTheJob) {
  SKIP_WITHOUT_PID_NAMESPACES();
  TempDir dir;
  std::string script = "trap 'echo handled > " + dir.file("term") + "; exit 0' TERM; echo up > " +
                       dir.file("ready") + "; while :; do sleep 0.05; done";
  BackgroundGpureap unshare(pid1_run_args(dir, script), {}, kNewPidNamespace);
  ASSERT_TRUE(wait_for_file(dir.file("ready")));
  pid_t pid1 = child_of(unshare.pid());
  ASSERT_GT(pid1, 0) << "cannot find gpureap under unshare";
  // PID 1 only receives signals it handles: a default-action SIGTERM would be dropped.
  ASSERT_EQ(::kill(pid1, SIGTERM), 0);
  auto r = unshare.wait(30000);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_text(dir.file("term")), "handled\n");
}

}  // namespace
}  // namespace gpureap::testing

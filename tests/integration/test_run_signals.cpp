// `gpureap run`: signals sent to gpureap reach the job; --grace, --timeout, exit statuses.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <sstream>

#include "support.h"

namespace gpureap::testing {
namespace {

std::vector<std::string> signal_run_args(const TempDir& dir,
                                         const std::vector<std::string>& options,
                                         const std::vector<std::string>& command) {
  std::vector<std::string> args{"--nvml-library", dir.file("no-such-libnvidia-ml.so.1"), "run",
                                "--report", dir.file("report.json")};
  args.insert(args.end(), options.begin(), options.end());
  args.push_back("--");
  args.insert(args.end(), command.begin(), command.end());
  return args;
}

TEST(RunSignals, SigtermReachesAJobThatHandlesIt) {
  TempDir dir;
  std::string script = "trap 'echo handled > " + dir.file("term") + "; exit 0' TERM; echo $$ > " +
                       dir.file("ready") + "; while :; do sleep 0.05; done";
  BackgroundGpureap gpureap(signal_run_args(dir, {}, {"sh", "-c", script}));
  ASSERT_TRUE(wait_for_file(dir.file("ready"))) << "the job did not start";
  ASSERT_EQ(::kill(gpureap.pid(), SIGTERM), 0);
  auto r = gpureap.wait();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_text(dir.file("term")), "handled\n") << "the job never saw SIGTERM";
  auto report = report_of(dir);
  EXPECT_EQ(report["stop"]["reason"], "signal");
  EXPECT_EQ(report["stop"]["signal"], "SIGTERM");
  EXPECT_EQ(report["stop"]["killed_after_grace"], false);
  EXPECT_NE(r.err.find("received SIGTERM and forwarded it"), std::string::npos) << r.err;
}

TEST(RunSignals, JobIgnoringSigtermIsKilledAfterTheGrace) {
  TempDir dir;
  std::string script =
      "trap '' TERM; echo $$ > " + dir.file("ready") + "; while :; do sleep 0.05; done";
  BackgroundGpureap gpureap(signal_run_args(dir, {"--grace", "300ms"}, {"sh", "-c", script}));
  ASSERT_TRUE(wait_for_file(dir.file("ready")));
  pid_t job = static_cast<pid_t>(std::stol(read_text(dir.file("ready"))));
  ASSERT_EQ(::kill(gpureap.pid(), SIGTERM), 0);
  auto r = gpureap.wait();
  EXPECT_EQ(r.exit_code, 128 + SIGKILL) << r.err;
  EXPECT_TRUE(wait_gone(job));
  auto report = report_of(dir);
  EXPECT_EQ(report["exit"]["cause"], "signaled");
  EXPECT_EQ(report["exit"]["signal"], "SIGKILL");
  EXPECT_EQ(report["stop"]["killed_after_grace"], true);
  EXPECT_NE(r.err.find("then SIGKILL when the grace period ended"), std::string::npos) << r.err;
}

TEST(RunSignals, Sigusr1GoesToTheCommandOnly) {
  TempDir dir;
  KillStrays strays;
  // The worker shares the job's process group and would die of SIGUSR1 (its default action)
  // if gpureap sent it to the whole group.
  std::string script = "trap 'echo got > " + dir.file("usr1") +
                       "; exit 5' USR1; sleep 1000 & echo $! > " + dir.file("worker") +
                       "; echo $$ > " + dir.file("ready") + "; while :; do sleep 0.05; done";
  BackgroundGpureap gpureap(signal_run_args(dir, {}, {"sh", "-c", script}));
  ASSERT_TRUE(wait_for_file(dir.file("ready")));
  pid_t worker = static_cast<pid_t>(std::stol(read_text(dir.file("worker"))));
  strays.pids = {worker};
  ASSERT_EQ(::kill(gpureap.pid(), SIGUSR1), 0);
  auto r = gpureap.wait();
  EXPECT_EQ(r.exit_code, 5) << r.err;
  EXPECT_EQ(read_text(dir.file("usr1")), "got\n");
  auto report = report_of(dir);
  EXPECT_EQ(report["stop"]["reason"], "none") << "SIGUSR1 is not a request to end the job";
  auto l = entry_of(report["leftovers"], worker);
  ASSERT_FALSE(l.is_null()) << "the worker got SIGUSR1 too: " << report.dump(2);
  EXPECT_EQ(l["signals"][0], "SIGTERM");
}

TEST(RunSignals, KilledGpureapLeavesTheJobASigterm) {
  TempDir dir;
  std::string script = "trap 'echo handled > " + dir.file("term") + "; exit 0' TERM; echo $$ > " +
                       dir.file("ready") + "; while :; do sleep 0.05; done";
  BackgroundGpureap gpureap(signal_run_args(dir, {}, {"sh", "-c", script}));
  ASSERT_TRUE(wait_for_file(dir.file("ready")));
  pid_t job = static_cast<pid_t>(std::stol(read_text(dir.file("ready"))));
  KillStrays strays{{job}};
  ASSERT_EQ(::kill(gpureap.pid(), SIGKILL), 0);
  EXPECT_EQ(gpureap.wait().exit_code, 128 + SIGKILL);
  EXPECT_TRUE(wait_for_file(dir.file("term"))) << "the job ran on after gpureap died";
  // Reparented to an init that may be slow to reap: a zombie counts as ended.
  EXPECT_TRUE(wait_gone(job) || wait_for_state(job, 'Z', 0));
}

TEST(RunSignals, TimeoutGives124) {
  TempDir dir;
  auto r =
      run_gpureap(signal_run_args(dir, {"--timeout", "300ms", "--grace", "5s"}, {"sleep", "1000"}));
  EXPECT_EQ(r.exit_code, 124) << r.err;
  auto report = report_of(dir);
  EXPECT_EQ(report["exit"]["code"], 124);
  EXPECT_EQ(report["exit"]["cause"], "timeout");
  EXPECT_EQ(report["exit"]["signal"], "SIGTERM") << "sleep dies of the SIGTERM";
  EXPECT_EQ(report["stop"]["reason"], "timeout");
  EXPECT_EQ(report["stop"]["killed_after_grace"], false);
  EXPECT_NE(r.err.find("timed out"), std::string::npos) << r.err;
}

TEST(RunSignals, TimeoutKillsAJobIgnoringSigtermAfterTheGraceAndStillGives124) {
  TempDir dir;
  auto r = run_gpureap(signal_run_args(dir, {"--timeout", "200ms", "--grace", "200ms"},
                                       {"sh", "-c", "trap '' TERM; while :; do sleep 0.05; done"}));
  EXPECT_EQ(r.exit_code, 124) << r.err;
  auto report = report_of(dir);
  EXPECT_EQ(report["exit"]["signal"], "SIGKILL");
  EXPECT_EQ(report["stop"]["killed_after_grace"], true);
}

TEST(RunSignals, DeathBySignalGives128PlusN) {
  TempDir dir;
  auto r = run_gpureap(signal_run_args(dir, {}, {"sh", "-c", "kill -USR2 $$"}));
  EXPECT_EQ(r.exit_code, 128 + SIGUSR2) << r.err;
  EXPECT_EQ(report_of(dir)["exit"]["signal"], "SIGUSR2");
  EXPECT_NE(r.err.find("was killed by SIGUSR2"), std::string::npos) << r.err;
}

// The job sees the signal mask and dispositions gpureap was started with, not gpureap's own
// (it blocks the forwarded signals, SIGCHLD, SIGTSTP, SIGCONT, SIGTTOU and ignores SIGPIPE).
// Only signals 1-31 are compared: glibc's posix_spawn leaves its two internal real-time
// signals ignored in the programs it starts, gpureap included.
TEST(RunSignals, JobDoesNotInheritGpureapsSignalMask) {
  TempDir dir;
  auto r = run_gpureap(signal_run_args(dir, {}, {"cat", "/proc/self/status"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto standard = [](const std::string& status, const std::string& key) {
    std::istringstream in(status);
    for (std::string line; std::getline(in, line);)
      if (line.rfind(key + ":", 0) == 0)
        return std::stoull(line.substr(key.size() + 1), nullptr, 16) & 0x7fffffffULL;
    ADD_FAILURE() << key << " missing";
    return ~0ULL;
  };
  std::string mine = read_text("/proc/self/status");
  EXPECT_EQ(standard(r.out, "SigBlk"), standard(mine, "SigBlk")) << r.out;
  EXPECT_EQ(standard(r.out, "SigIgn"), standard(mine, "SigIgn")) << r.out;
}

}  // namespace
}  // namespace gpureap::testing

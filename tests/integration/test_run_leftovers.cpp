// `gpureap run`: processes a job leaves behind are ended and reported, however they hid.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>

#include "support.h"

namespace gpureap::testing {
namespace {

// No NVML: the release is checked through the device files under the stand-in dev root.
std::vector<std::string> leftover_run_args(const FakeDevRoot& dev, const TempDir& dir,
                                           const std::vector<std::string>& options,
                                           const std::string& script) {
  std::vector<std::string> args{
      "--dev-root", dev.path(), "--nvml-library",       dir.file("no-such-libnvidia-ml.so.1"),
      "run",        "--report", dir.file("report.json")};
  args.insert(args.end(), options.begin(), options.end());
  args.insert(args.end(), {"--", "sh", "-c", script});
  return args;
}

pid_t pid_in(const TempDir& dir, const std::string& name) {
  return static_cast<pid_t>(std::stol(read_text(dir.file(name))));
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

TEST(RunLeftovers, WorkersInheritingADeviceFdAreEndedAndReported) {
  FakeDevRoot dev;
  TempDir dir;
  KillStrays strays;
  // The job opens a stand-in device file, forks two workers that inherit it, and exits.
  std::string script = "exec 3<" + dev.dev("nvidia0") + "; sleep 1000 & echo $! > " +
                       dir.file("w1") + "; sleep 1000 & echo $! > " + dir.file("w2") + "; exit 7";
  auto r = run_gpureap(leftover_run_args(dev, dir, {}, script));
  pid_t w1 = pid_in(dir, "w1"), w2 = pid_in(dir, "w2");
  strays.pids = {w1, w2};
  EXPECT_EQ(r.exit_code, 7) << r.err;
  EXPECT_TRUE(wait_gone(w1)) << "worker " << w1 << " outlived gpureap";
  EXPECT_TRUE(wait_gone(w2)) << "worker " << w2 << " outlived gpureap";

  auto report = report_of(dir);
  EXPECT_EQ(report["schema"], "gpureap.run/v1");
  EXPECT_EQ(report["exit"]["code"], 7);
  EXPECT_EQ(report["exit"]["cause"], "exited");
  EXPECT_EQ(report["exit"]["status"], 7);
  ASSERT_EQ(report["leftovers"].size(), 2u) << report.dump(2);
  for (pid_t w : {w1, w2}) {
    auto l = entry_of(report["leftovers"], w);
    ASSERT_FALSE(l.is_null()) << "worker " << w << " not reported";
    EXPECT_EQ(l["ended"], true);
    EXPECT_EQ(l["comm"], "sleep");
    EXPECT_EQ(strings(l["command"]), (std::vector<std::string>{"sleep", "1000"}));
    EXPECT_EQ(strings(l["devices"]), std::vector<std::string>{dev.dev("nvidia0")});
    EXPECT_EQ(l["signals"][0], "SIGTERM");
    EXPECT_FALSE(contains(strings(l["signals"]), "SIGKILL")) << "sleep ends on SIGTERM";
  }
  EXPECT_EQ(report["release"]["checked"], true);
  EXPECT_EQ(report["release"]["method"], "device-files");
  EXPECT_EQ(report["release"]["released"], true);
  EXPECT_EQ(report["gpu"]["available"], false);

  EXPECT_NE(r.err.find("exited with status 7"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("ended 2 leftover processes"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(std::to_string(w1) + "  sleep 1000"), std::string::npos) << r.err;
}

TEST(RunLeftovers, DoubleForkedSetsidDaemonIsEnded) {
  FakeDevRoot dev;
  TempDir dir;
  KillStrays strays;
  std::string d = dir.file("daemon");
  // setsid -f forks: the daemon's parent exits at once, and the daemon leads a new session.
  // The job checks that before exiting (status 99 otherwise).
  std::string script = "setsid -f sh -c 'echo $$ > " + d +
                       "; exec sleep 1000' </dev/null >/dev/null 2>&1; "
                       "while [ ! -s " +
                       d + " ]; do sleep 0.01; done; p=$(cat " + d +
                       "); "
                       "[ \"$(cut -d' ' -f6 /proc/$p/stat)\" = \"$p\" ] || exit 99; exit 0";
  auto r = run_gpureap(leftover_run_args(dev, dir, {"--grace", "5s"}, script));
  pid_t daemon = pid_in(dir, "daemon");
  strays.pids = {daemon};
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(wait_gone(daemon)) << "the setsid daemon outlived gpureap";
  auto report = report_of(dir);
  auto l = entry_of(report["leftovers"], daemon);
  ASSERT_FALSE(l.is_null()) << report.dump(2);
  EXPECT_EQ(l["ended"], true);
}

TEST(RunLeftovers, LeftoverIgnoringSigtermIsKilledAfterTheGrace) {
  FakeDevRoot dev;
  TempDir dir;
  KillStrays strays;
  std::string w = dir.file("w");
  std::string script = "sh -c 'trap \"\" TERM; echo $$ > " + w +
                       "; exec sleep 1000' & "
                       "while [ ! -s " +
                       w + " ]; do sleep 0.01; done; exit 0";
  auto r = run_gpureap(leftover_run_args(dev, dir, {"--grace", "200ms"}, script));
  pid_t worker = pid_in(dir, "w");
  strays.pids = {worker};
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(wait_gone(worker));
  auto l = entry_of(report_of(dir)["leftovers"], worker);
  ASSERT_FALSE(l.is_null());
  EXPECT_EQ(l["ended"], true);
  EXPECT_EQ(strings(l["signals"]), (std::vector<std::string>{"SIGTERM", "SIGCONT", "SIGKILL"}));
  EXPECT_NE(r.err.find("SIGTERM, then SIGKILL"), std::string::npos) << r.err;
}

TEST(RunLeftovers, StoppedLeftoverIsEnded) {
  FakeDevRoot dev;
  TempDir dir;
  KillStrays strays;
  // A stopped process acts on SIGTERM only once continued: gpureap sends SIGCONT with it.
  std::string w = dir.file("w");
  std::string script =
      "sh -c 'echo $$ > " + w +
      "; kill -STOP $$; exec sleep 1000' & "
      "while [ ! -s " +
      w + " ]; do sleep 0.01; done; p=$(cat " + w +
      "); "
      "while [ \"$(cut -d' ' -f3 /proc/$p/stat)\" != T ]; do sleep 0.01; done; exit 0";
  auto r = run_gpureap(leftover_run_args(dev, dir, {"--grace", "20s"}, script));
  pid_t worker = pid_in(dir, "w");
  strays.pids = {worker};
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto l = entry_of(report_of(dir)["leftovers"], worker);
  ASSERT_FALSE(l.is_null());
  EXPECT_EQ(l["ended"], true);
  EXPECT_FALSE(contains(strings(l["signals"]), "SIGKILL")) << "SIGTERM should have ended it";
}

TEST(RunLeftovers, KeepDescendantsLeavesThemRunning) {
  FakeDevRoot dev;
  TempDir dir;
  KillStrays strays;
  std::string script = "sleep 1000 & echo $! > " + dir.file("w") + "; exit 0";
  auto r = run_gpureap(leftover_run_args(dev, dir, {"--keep-descendants"}, script));
  pid_t worker = pid_in(dir, "w");
  strays.pids = {worker};
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(is_alive(worker)) << "--keep-descendants ended the worker";
  auto report = report_of(dir);
  EXPECT_EQ(report["leftovers"].size(), 0u);
  EXPECT_FALSE(entry_of(report["kept"], worker).is_null()) << report.dump(2);
  EXPECT_EQ(report["release"]["checked"], false);
  EXPECT_NE(r.err.find("left 1 process running"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace gpureap::testing

// `gpureap kill` against real processes holding stand-in device files: signal, escalate,
// resume, dry run, confirmation and exit codes. No GPU driver: verification is that no
// target still holds a device file.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support.h"

namespace gpureap::testing {
namespace {

TEST(KillBasic, CooperativeProcessIsKilledAndVerified) {
  FakeDevRoot dev;
  Child holder = holding(dev, "nvidia0");
  auto r = run_gpureap(kill_args(dev, {std::to_string(holder.pid()), "--yes"}));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  auto doc = parse_output(r);
  EXPECT_EQ(doc["schema"], "gpureap.kill/v1");
  EXPECT_EQ(doc["executed"], true);
  EXPECT_EQ(doc["backend"]["available"], false);
  auto target = entry_of(doc["plan"]["targets"], holder.pid());
  ASSERT_FALSE(target.is_null()) << doc.dump(2);
  EXPECT_EQ(target["action"], "signal");
  EXPECT_EQ(target["reasons"][0]["kind"], "named");
  EXPECT_EQ(target["uid"], getuid());
  EXPECT_TRUE(target["start_ticks"].is_number());
  auto outcome = entry_of(doc["outcomes"], holder.pid());
  ASSERT_FALSE(outcome.is_null());
  EXPECT_EQ(outcome["outcome"], "released");
  EXPECT_EQ(outcome["signals"], nlohmann::json::array({"SIGTERM"}));
  EXPECT_EQ(outcome["exited_after"], "SIGTERM");
  EXPECT_TRUE(outcome["exited_at_us"].is_number());
  EXPECT_EQ(doc["summary"]["released"], 1);
  EXPECT_EQ(doc["summary"]["exit_code"], 0);
  EXPECT_TRUE(doc["timing"]["after_last_exit_ms"].is_number());
  // No daemon to ask: the kernel's word on the release is unknown, not "nothing released".
  ASSERT_TRUE(doc.contains("kernel_releases"));
  EXPECT_TRUE(doc["kernel_releases"].is_null());
  EXPECT_EQ(end_signal(holder.pid()), SIGTERM);
}

TEST(KillBasic, ProcessIgnoringSigtermIsEscalatedToSigkill) {
  FakeDevRoot dev;
  Child holder = holding(dev, "nvidia0", [&] { ::signal(SIGTERM, SIG_IGN); });
  auto r = run_gpureap(kill_args(dev, {std::to_string(holder.pid()), "--yes", "--grace", "300ms"}));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  auto outcome = entry_of(parse_output(r)["outcomes"], holder.pid());
  EXPECT_EQ(outcome["outcome"], "released");
  EXPECT_EQ(outcome["signals"], nlohmann::json::array({"SIGTERM", "SIGKILL"}));
  EXPECT_EQ(outcome["exited_after"], "SIGKILL");
  EXPECT_EQ(end_signal(holder.pid()), SIGKILL);
}

TEST(KillBasic, NoEscalateReportsTheSurvivor) {
  FakeDevRoot dev;
  Child holder = holding(dev, "nvidia0", [&] { ::signal(SIGTERM, SIG_IGN); });
  auto r = run_gpureap(
      kill_args(dev, {std::to_string(holder.pid()), "--yes", "--grace", "200ms", "--no-escalate"}));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  auto outcome = entry_of(parse_output(r)["outcomes"], holder.pid());
  EXPECT_EQ(outcome["outcome"], "survived");
  EXPECT_EQ(outcome["signals"], nlohmann::json::array({"SIGTERM"}));
  EXPECT_NE(outcome["why"].get<std::string>().find("--no-escalate"), std::string::npos);
  EXPECT_TRUE(is_alive(holder.pid()));
}

TEST(KillBasic, StoppedProcessIsResumedSoItActsOnSigterm) {
  FakeDevRoot dev;
  Child holder = holding(dev, "nvidia1");
  ::kill(holder.pid(), SIGSTOP);
  ASSERT_TRUE(wait_for_state(holder.pid(), 'T'));
  // --no-escalate: only SIGCONT lets SIGTERM act; without it the process would survive.
  FakeNvml idle(idle_gpus());
  auto r = run_gpureap(
      gpu_kill_args(dev, {"--gpu", "1", "--yes", "--no-escalate", "--grace", "5s"}), idle.env());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  auto doc = parse_output(r);
  auto target = entry_of(doc["plan"]["targets"], holder.pid());
  EXPECT_EQ(target["state"], "T");
  EXPECT_EQ(target["reasons"][0]["kind"], "holds-device");
  EXPECT_EQ(target["reasons"][0]["gpu"], 1);
  auto outcome = entry_of(doc["outcomes"], holder.pid());
  EXPECT_EQ(outcome["signals"], nlohmann::json::array({"SIGTERM", "SIGCONT"}));
  EXPECT_EQ(outcome["exited_after"], "SIGTERM");
  EXPECT_EQ(outcome["outcome"], "released");
  EXPECT_EQ(end_signal(holder.pid()), SIGTERM);
}

TEST(KillBasic, DryRunSignalsNothing) {
  FakeDevRoot dev;
  Child holder = holding(dev, "nvidia0", [&] { block_all_signals(); });
  FakeNvml idle(idle_gpus());
  auto r = run_gpureap(gpu_kill_args(dev, {"--gpu", "0", "--dry-run"}), idle.env());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  auto doc = parse_output(r);
  EXPECT_EQ(doc["executed"], false);
  EXPECT_EQ(doc["request"]["dry_run"], true);
  EXPECT_EQ(doc["plan"]["targets"].size(), 1u);
  EXPECT_EQ(doc["plan"]["targets"][0]["pid"], holder.pid());
  EXPECT_EQ(doc["outcomes"], nlohmann::json::array());
  EXPECT_TRUE(no_signal_pending(holder.pid()));
  EXPECT_TRUE(is_alive(holder.pid()));
}

TEST(KillBasic, WithoutATerminalItNeedsYes) {
  FakeDevRoot dev;
  Child holder = holding(dev, "nvidia0", [&] { block_all_signals(); });
  auto r = run_gpureap(kill_args(dev, {std::to_string(holder.pid())}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--yes"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--dry-run"), std::string::npos) << r.err;
  EXPECT_TRUE(no_signal_pending(holder.pid()));
}

TEST(KillBasic, OnATerminalItAsksAndKillsOnYes) {
  FakeDevRoot dev;
  Child holder = holding(dev, "nvidia0");
  auto r = run_gpureap_on_tty(
      {"kill", std::to_string(holder.pid()), "--dev-root", dev.path(), "--nvml-library", kNoNvml},
      "[y/N]", "y");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("PID " + std::to_string(holder.pid())), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(": 1 process to signal"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Kill 1 process? [y/N]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("released"), std::string::npos) << r.out;
  EXPECT_EQ(end_signal(holder.pid()), SIGTERM);
}

TEST(KillBasic, OnATerminalAnythingButYesSignalsNothing) {
  FakeDevRoot dev;
  Child holder = holding(dev, "nvidia0", [&] { block_all_signals(); });
  auto r = run_gpureap_on_tty(
      {"kill", std::to_string(holder.pid()), "--dev-root", dev.path(), "--nvml-library", kNoNvml},
      "[y/N]", "n");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("Nothing was signalled"), std::string::npos) << r.out;
  EXPECT_TRUE(no_signal_pending(holder.pid()));
}

TEST(KillBasic, HumanOutputShowsThePlanAndTheOutcome) {
  FakeDevRoot dev;
  Child holder = holding(dev, "nvidia0");
  auto r = run_gpureap({"kill", std::to_string(holder.pid()), "--yes", "--dev-root", dev.path(),
                        "--nvml-library", kNoNvml});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(
      r.out.rfind("PID " + std::to_string(holder.pid()) + ": 1 process to signal (SIGTERM", 0), 0u)
      << r.out;
  EXPECT_NE(r.out.find("released"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("exited on SIGTERM"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("No GPU driver"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos);  // no colour when not on a terminal
}

TEST(KillBasic, NothingMatchedExitsThree) {
  FakeDevRoot dev;
  FakeNvml idle(idle_gpus());
  auto by_gpu = run_gpureap(gpu_kill_args(dev, {"--gpu", "1", "--yes"}), idle.env());
  EXPECT_EQ(by_gpu.exit_code, 3) << by_gpu.out << by_gpu.err;
  EXPECT_EQ(parse_output(by_gpu)["plan"]["targets"], nlohmann::json::array());
  // A PID that does not exist (beyond the default pid_max).
  auto by_pid = run_gpureap(kill_args(dev, {"4194304", "--yes"}));
  EXPECT_EQ(by_pid.exit_code, 3) << by_pid.out << by_pid.err;
  EXPECT_NE(parse_output(by_pid)["plan"]["notes"][0].get<std::string>().find("no such process"),
            std::string::npos);
}

TEST(KillBasic, UsageErrorsExitTwo) {
  FakeDevRoot dev;
  for (auto extra : std::vector<std::vector<std::string>>{{"1", "--grace", "soon"},
                                                          {"1", "--signal", "TERMINATE"},
                                                          {"1", "--wait-release", "-5s"},
                                                          {"1", "--tree", "--group"},
                                                          {}}) {
    auto r = run_gpureap(kill_args(dev, extra));
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_FALSE(r.err.empty());
  }
}

TEST(KillBasic, CustomSignal) {
  FakeDevRoot dev;
  Child holder = holding(dev, "nvidia0", [&] {
    ::signal(SIGINT, SIG_DFL);  // a shell starting the tests in the background ignores it
  });
  auto r = run_gpureap(kill_args(dev, {std::to_string(holder.pid()), "--yes", "--signal", "INT"}));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(entry_of(parse_output(r)["outcomes"], holder.pid())["exited_after"], "SIGINT");
  EXPECT_EQ(end_signal(holder.pid()), SIGINT);
}

}  // namespace
}  // namespace gpureap::testing

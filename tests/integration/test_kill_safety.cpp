// What `gpureap kill` refuses: protected processes unless named, zombies (reported with their
// parent), other users' processes for a non-root caller, and its own ancestors.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support.h"

namespace gpureap::testing {
namespace {

TEST(KillSafety, ProtectedProcessIsRefusedUnlessNamed) {
  if (::geteuid() != 0) GTEST_SKIP() << "a system-installed program needs root to install";
  FakeDevRoot dev;
  // A signal sent would stay pending: visible to the test.
  auto program = run_system_program(dev, "nvidia0", "nvidia-persistenced", true);
  const Child& daemon = *program->child;
  FakeNvml idle(idle_gpus());
  auto found = run_gpureap(gpu_kill_args(dev, {"--gpu", "0", "--yes"}), idle.env());
  EXPECT_EQ(found.exit_code, 3) << found.out << found.err;
  auto target = entry_of(parse_output(found)["plan"]["targets"], daemon.pid());
  ASSERT_FALSE(target.is_null()) << found.out;
  EXPECT_EQ(target["comm"], "nvidia-persiste");
  EXPECT_EQ(target["action"], "refused");
  EXPECT_NE(target["refusal"].get<std::string>().find("protected"), std::string::npos);
  EXPECT_TRUE(no_signal_pending(daemon.pid()));

  // Named explicitly it is killed: SIGTERM stays blocked, so the grace ends in SIGKILL.
  auto named =
      run_gpureap(kill_args(dev, {std::to_string(daemon.pid()), "--yes", "--grace", "200ms"}));
  EXPECT_EQ(named.exit_code, 0) << named.out << named.err;
  auto doc = parse_output(named);
  EXPECT_EQ(entry_of(doc["plan"]["targets"], daemon.pid())["action"], "signal");
  auto outcome = entry_of(doc["outcomes"], daemon.pid());
  EXPECT_EQ(outcome["outcome"], "released");
  EXPECT_EQ(outcome["exited_after"], "SIGKILL");
  EXPECT_EQ(end_signal(daemon.pid()), SIGKILL);
}

TEST(KillSafety, AUsersLookAlikeOfAProtectedNameIsNotProtected) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run the look-alike as another user";
  FakeDevRoot dev;
  ::chmod(dev.path().c_str(), 0755);
  ::chmod(dev.dev("nvidia0").c_str(), 0644);
  for (const char* name : {"Xorg", "nvidia-persistenced"}) {
    Ready ready;
    Child lookalike([&] {
      block_all_signals();
      hold(dev.dev("nvidia0"));
      if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(96);
      ::prctl(PR_SET_NAME, name);
      ready.signal();
    });
    ready.wait();
    FakeNvml idle(idle_gpus());
    auto plan = run_gpureap(gpu_kill_args(dev, {"--gpu", "0", "--dry-run"}), idle.env());
    auto target = entry_of(parse_output(plan)["plan"]["targets"], lookalike.pid());
    ASSERT_FALSE(target.is_null()) << plan.out;
    EXPECT_EQ(target["action"], "signal") << name << ": " << target.dump();
  }
}

TEST(KillSafety, ZombieIsReportedWithItsParent) {
  FakeDevRoot dev;
  Ready ready;
  Child parent([&] {
    ::prctl(PR_SET_NAME, "lazy-parent");
    hold(dev.dev("nvidia0"));
    pid_t z = ::fork();
    if (z == 0) ::_exit(0);
    ready.send(z);
  });
  pid_t zombie = static_cast<pid_t>(ready.receive());
  ASSERT_TRUE(wait_for_state(zombie, 'Z'));
  auto r = run_gpureap(kill_args(dev, {std::to_string(zombie), "--yes"}));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  auto doc = parse_output(r);
  EXPECT_EQ(entry_of(doc["plan"]["targets"], zombie)["action"], "zombie");
  auto outcome = entry_of(doc["outcomes"], zombie);
  ASSERT_FALSE(outcome.is_null()) << r.out;
  EXPECT_EQ(outcome["outcome"], "survived");
  EXPECT_EQ(outcome["signals"], nlohmann::json::array());
  EXPECT_EQ(outcome["parent"]["pid"], parent.pid());
  EXPECT_EQ(outcome["parent"]["comm"], "lazy-parent");
  EXPECT_NE(outcome["why"].get<std::string>().find("gpureap kill " + std::to_string(parent.pid())),
            std::string::npos);
  EXPECT_TRUE(is_alive(parent.pid()));  // the parent is reported, not killed
}

TEST(KillSafety, NonRootCallerIsNotPermittedForARootProcess) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to drop privileges to nobody";
  if (!binary_runnable_as_nobody()) GTEST_SKIP() << "nobody cannot reach the gpureap binary here";
  FakeDevRoot dev;
  ::chmod(dev.path().c_str(), 0755);  // nobody must be able to read the dev root
  Child victim = holding(dev, "nvidia0", [&] { block_all_signals(); });
  auto r = run_gpureap_as(65534, 65534, kill_args(dev, {std::to_string(victim.pid()), "--yes"}));
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  auto doc = parse_output(r);
  auto target = entry_of(doc["plan"]["targets"], victim.pid());
  ASSERT_FALSE(target.is_null()) << r.out << r.err;
  EXPECT_EQ(target["action"], "not-permitted");
  EXPECT_EQ(target["uid"], 0);
  EXPECT_NE(target["refusal"].get<std::string>().find("root"), std::string::npos);
  EXPECT_EQ(doc["summary"]["not_permitted"], 1);
  EXPECT_TRUE(no_signal_pending(victim.pid()));
  EXPECT_TRUE(is_alive(victim.pid()));
}

TEST(KillSafety, OwnAncestorsAreNeverSignalledEvenWhenNamed) {
  FakeDevRoot dev;
  // This test process is gpureap's parent.
  auto r = run_gpureap(kill_args(dev, {std::to_string(::getpid()), "--yes"}));
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  auto target = entry_of(parse_output(r)["plan"]["targets"], ::getpid());
  EXPECT_EQ(target["action"], "refused");
  EXPECT_NE(target["refusal"].get<std::string>().find("ancestor"), std::string::npos);
  auto init = run_gpureap(kill_args(dev, {"1", "--yes"}));
  EXPECT_EQ(init.exit_code, 3) << init.out << init.err;
  EXPECT_EQ(entry_of(parse_output(init)["plan"]["targets"], 1)["action"], "refused");
}

}  // namespace
}  // namespace gpureap::testing

// `gpureap kill` with the NVML test double: a gone PID resolved to the workers that inherited
// its device files, a release the driver delays, a leaked context, and a listed PID whose
// children keep its memory.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <set>

#include "support.h"

namespace gpureap::testing {
namespace {

class KillRelease : public ::testing::Test {
 protected:
  void SetUp() override {
#ifndef FAKE_NVML_LIBRARY
    GTEST_SKIP() << "the NVML test double (tests/fake_nvml) is not built";
#endif
  }

  // One GPU, minor 0 (the stand-in /dev/nvidia0), whose driver holds 512 MiB for nobody.
  void scenario(const nlohmann::json& processes) {
    nlohmann::json gpu{{"minor", 0},
                       {"total_bytes", 80 * GiB},
                       {"driver_held_bytes", 512ull << 20},
                       {"processes", processes}};
    std::ofstream(dir_.file("scenario.json")) << nlohmann::json{{"gpus", {gpu}}}.dump(2);
  }

  RunResult kill(std::vector<std::string> extra) {
    std::vector<std::string> args{"kill", "--json", "--dev-root", dev_.path()};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<std::string> env{"FAKE_NVML_SCENARIO=" + dir_.file("scenario.json")};
#ifdef FAKE_NVML_LIBRARY
    env.push_back(std::string("GPUREAP_NVML_LIBRARY=") + FAKE_NVML_LIBRARY);
#endif
    return run_gpureap(args, env);
  }

  TempDir dir_;
  FakeDevRoot dev_;
};

TEST_F(KillRelease, GonePidIsResolvedToItsInheritedHoldersAndItsMemoryComesBack) {
  Ready ready;
  Child trainer([&] {
    ::setpgid(0, 0);
    hold(dev_.dev("nvidia0"));
    hold(dev_.dev("nvidiactl"));
    for (int i = 0; i < 2; ++i) {
      if (::fork() == 0) {
        ::prctl(PR_SET_NAME, "loader-worker");
        ready.send(::getpid());  // once named: the handshake covers the rename
        for (;;) ::pause();
      }
    }
    ::_exit(0);  // the trainer dies; its workers keep its context alive
  });
  pid_t gone = trainer.pid();
  pid_t a = static_cast<pid_t>(ready.receive()), b = static_cast<pid_t>(ready.receive());
  pid_t w1 = std::min(a, b), w2 = std::max(a, b);  // the plan lists keepers by pid
  KillStrays strays{{w1, w2}};
  trainer.kill_and_reap();
  scenario({{{"pid", gone}, {"used_bytes", 6 * GiB}, {"holders", {w1, w2}}, {"name", "python"}}});

  auto r = kill({std::to_string(gone), "--yes"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  auto doc = parse_output(r);
  EXPECT_EQ(doc["backend"]["available"], true) << r.out;
  std::set<pid_t> targets;
  for (const auto& t : doc["plan"]["targets"]) {
    targets.insert(t["pid"].get<pid_t>());
    EXPECT_EQ(t["comm"], "loader-worker");
    EXPECT_EQ(t["keeps"], nlohmann::json::array({gone}));
    EXPECT_EQ(t["reasons"][0]["kind"], "inherited-holder");
    EXPECT_EQ(t["reasons"][0]["pid"], gone);
  }
  EXPECT_EQ(targets, (std::set<pid_t>{w1, w2}));
  auto listing = entry_of(doc["plan"]["gone"], gone);
  ASSERT_FALSE(listing.is_null()) << r.out;
  EXPECT_EQ(listing["memory_bytes"], 6 * GiB);
  EXPECT_EQ(listing["keepers"], nlohmann::json::array({w1, w2}));
  for (pid_t w : {w1, w2}) {
    EXPECT_EQ(entry_of(doc["outcomes"], w)["outcome"], "released");
    EXPECT_FALSE(is_alive(w));
  }
  auto released = entry_of(doc["gone_outcomes"], gone);
  EXPECT_EQ(released["released"], true);
  EXPECT_EQ(released["bytes"], 6 * GiB);
  EXPECT_EQ(doc["summary"]["freed"][0]["bytes"], 6 * GiB);
  EXPECT_EQ(doc["summary"]["freed"][0]["used_before"], 6 * GiB + (512ull << 20));
  EXPECT_EQ(doc["summary"]["freed"][0]["used_after"], 512ull << 20);
}

TEST_F(KillRelease, DelayedReleaseIsAwaited) {
  Child holder = holding(dev_, "nvidia0");
  scenario({{{"pid", holder.pid()}, {"used_bytes", 3 * GiB}, {"release_delay_ms", 700}}});
  auto r = kill({std::to_string(holder.pid()), "--yes"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  auto doc = parse_output(r);
  auto outcome = entry_of(doc["outcomes"], holder.pid());
  EXPECT_EQ(outcome["outcome"], "released") << r.out;
  EXPECT_EQ(outcome["released_bytes"], 3 * GiB);
  // The double lists the context for 700 ms after it first sees the process dead, which is
  // after the exit: the verification must have waited at least that long, over several polls.
  EXPECT_GE(outcome["release_ms"].get<long long>(), 700);
  EXPECT_GE(doc["summary"]["polls"].get<int>(), 2);
  EXPECT_EQ(doc["summary"]["freed"][0]["bytes"], 3 * GiB);
}

TEST_F(KillRelease, LeakedContextEndsStillHeld) {
  Child holder = holding(dev_, "nvidia0");
  scenario({{{"pid", holder.pid()}, {"used_bytes", GiB}, {"leaked", true}}});
  auto r = kill({std::to_string(holder.pid()), "--yes", "--wait-release", "500ms"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  auto doc = parse_output(r);
  auto outcome = entry_of(doc["outcomes"], holder.pid());
  EXPECT_EQ(outcome["outcome"], "still-held") << r.out;
  EXPECT_EQ(outcome["exited_after"], "SIGTERM");
  EXPECT_EQ(outcome["held_by"], nlohmann::json::array());
  EXPECT_NE(outcome["why"].get<std::string>().find("leaked"), std::string::npos) << outcome.dump();
  EXPECT_EQ(doc["summary"]["still_held"], 1);
  EXPECT_EQ(doc["summary"]["freed"][0]["bytes"], 0);
  EXPECT_EQ(end_signal(holder.pid()), SIGTERM);
}

TEST_F(KillRelease, ListedPidKeptAliveByItsChildrenIsStillHeldByThemUntilTree) {
  Ready ready;
  Child trainer([&] {
    ::setpgid(0, 0);
    hold(dev_.dev("nvidia0"));
    if (::fork() == 0) {
      ::prctl(PR_SET_NAME, "worker");
      ready.send(::getpid());
      for (;;) ::pause();
    }
  });
  pid_t worker = static_cast<pid_t>(ready.receive());
  pid_t trainer_pid = trainer.pid();
  KillStrays strays{{worker}};
  scenario({{{"pid", trainer_pid}, {"used_bytes", 2 * GiB}, {"holders", {trainer_pid, worker}}}});

  auto alone = kill({std::to_string(trainer_pid), "--yes", "--wait-release", "300ms"});
  EXPECT_EQ(alone.exit_code, 1) << alone.out << alone.err;
  auto outcome = entry_of(parse_output(alone)["outcomes"], trainer_pid);
  EXPECT_EQ(outcome["outcome"], "still-held") << alone.out;
  ASSERT_EQ(outcome["held_by"].size(), 1u) << outcome.dump();
  EXPECT_EQ(outcome["held_by"][0]["pid"], worker);
  EXPECT_EQ(outcome["held_by"][0]["comm"], "worker");
  EXPECT_TRUE(is_alive(worker));

  // Reaped, the trainer is a gone listed PID: naming it again reaches the worker that keeps it.
  trainer.kill_and_reap();
  auto again = kill({std::to_string(trainer_pid), "--yes"});
  EXPECT_EQ(again.exit_code, 0) << again.out << again.err;
  auto doc = parse_output(again);
  EXPECT_EQ(entry_of(doc["outcomes"], worker)["outcome"], "released");
  EXPECT_EQ(entry_of(doc["gone_outcomes"], trainer_pid)["released"], true);
  EXPECT_FALSE(is_alive(worker));
}

}  // namespace
}  // namespace gpureap::testing

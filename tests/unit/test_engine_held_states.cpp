// held_states_moved against the real /proc: a GPU holder or listed process paused or resumed
// since the view was read is read again at the next collection; one that only wakes and sleeps,
// a process that holds nothing and is not listed, and one gone cost nothing more.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "engine/held_states.h"

namespace gpureap::engine {
namespace {
namespace held_states_test {

class HeldStates : public ::testing::Test {
 protected:
  void SetUp() override {
    auto p = procfs::ProcFs::open("/proc");
    ASSERT_TRUE(p) << p.error().text();
    proc_.emplace(std::move(*p));
    child_ = ::fork();
    if (child_ == 0) {
      for (;;) ::pause();
    }
    ASSERT_GT(child_, 0);
    ASSERT_TRUE(wait_state('S')) << "the child never reached pause()";
  }
  void TearDown() override {
    if (child_ > 0) {
      ::kill(child_, SIGKILL);
      ::waitpid(child_, nullptr, 0);
    }
  }

  bool wait_state(char want) {
    for (int i = 0; i < 12000; ++i) {
      auto st = proc_->read_stat(child_);
      if (st && *st && (*st)->state == want) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }

  // The view as a read of /proc now has it: the child alone, holding a GPU file or not.
  core::ProcView view_now(bool holder) const {
    core::ProcView v;
    auto st = proc_->read_stat(child_);
    if (st && *st) {
      core::HostProcess p;
      p.stat = **st;
      if (holder) {
        core::DeviceHold hold;
        hold.path = "/dev/nvidia0";
        hold.gpu_file = true;
        hold.fds = {3};
        p.devices.push_back(hold);
      }
      v.processes = {p};
    }
    return v;
  }

  std::optional<procfs::ProcFs> proc_;
  pid_t child_ = -1;
};

using Pids = std::vector<pid_t>;

TEST_F(HeldStates, AHolderPausedOrResumedSinceTheViewIsReadAgain) {
  const auto asleep = view_now(true);
  EXPECT_EQ(held_states_moved(*proc_, asleep, {}), Pids{});
  ASSERT_EQ(::kill(child_, SIGSTOP), 0);
  ASSERT_TRUE(wait_state('T'));
  EXPECT_EQ(held_states_moved(*proc_, asleep, {}), Pids{child_});
  const auto paused = view_now(true);
  EXPECT_EQ(held_states_moved(*proc_, paused, {}), Pids{});
  ASSERT_EQ(::kill(child_, SIGCONT), 0);
  ASSERT_TRUE(wait_state('S'));
  EXPECT_EQ(held_states_moved(*proc_, paused, {}), Pids{child_});
}

TEST_F(HeldStates, AListedProcessIsAskedAndOneThatIsNeitherIsNot) {
  ASSERT_EQ(::kill(child_, SIGSTOP), 0);
  ASSERT_TRUE(wait_state('T'));
  const auto paused = view_now(false);
  ASSERT_EQ(::kill(child_, SIGCONT), 0);
  ASSERT_TRUE(wait_state('S'));
  EXPECT_EQ(held_states_moved(*proc_, paused, {child_}), Pids{child_});
  EXPECT_EQ(held_states_moved(*proc_, paused, {}), Pids{}) << "holds nothing, not listed";
}

TEST_F(HeldStates, AWakeAndAnEndAreNoChangeOfState) {
  // Read running: sleeping now is the same state for what decides.
  auto view = view_now(true);
  core::HostProcess running = view.processes[0];
  running.stat.state = 'R';
  view.processes = {running};
  EXPECT_EQ(held_states_moved(*proc_, view, {child_}), Pids{});
  // Gone: EndedProcesses' to tell, not a change of state.
  ASSERT_EQ(::kill(child_, SIGSTOP), 0);
  ASSERT_TRUE(wait_state('T'));
  ::kill(child_, SIGKILL);
  ::waitpid(child_, nullptr, 0);
  const pid_t gone = child_;
  child_ = -1;
  EXPECT_EQ(held_states_moved(*proc_, view, {gone}), Pids{});
}

}  // namespace held_states_test
}  // namespace
}  // namespace gpureap::engine

// EndedProcesses against the real /proc: a process of the view that ends is read again at the
// next collection while a zombie and once reaped, whether the driver lists it, the kernel saw
// it end, or the view already holds its zombie; one that runs on costs nothing more.
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "engine/ended_processes.h"

namespace gpureap::engine {
namespace {

class EndedProcessesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto p = procfs::ProcFs::open("/proc");
    ASSERT_TRUE(p) << p.error().text();
    proc_.emplace(std::move(*p));
    child_ = ::fork();
    if (child_ == 0) {
      ::pause();
      ::_exit(0);
    }
    ASSERT_GT(child_, 0);
    // Asleep in pause() before any view is taken: a child still starting (R) on a loaded
    // machine would read otherwise a moment later, and a view is compared with a later read.
    bool asleep = false;
    for (int i = 0; i < 12000 && !asleep; ++i) {
      auto st = proc_->read_stat(child_);
      asleep = st && *st && (*st)->state == 'S';
      if (!asleep) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ASSERT_TRUE(asleep) << "the child never reached pause()";
  }
  void TearDown() override {
    if (child_ > 0) {
      ::kill(child_, SIGKILL);
      ::waitpid(child_, nullptr, 0);
    }
  }

  // The view as a read of /proc now has it: the child alone.
  core::ProcView view_now() const {
    core::ProcView v;
    auto st = proc_->read_stat(child_);
    if (st && *st) {
      core::HostProcess p;
      p.stat = **st;
      v.processes = {p};
    }
    return v;
  }

  // SIGKILLs the child and waits until it is a zombie (not reaped).
  bool kill_to_zombie() {
    ::kill(child_, SIGKILL);
    for (int i = 0; i < 6000; ++i) {
      auto st = proc_->read_stat(child_);
      if (st && *st && (*st)->state == 'Z') return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  void reap() {
    ::waitpid(child_, nullptr, 0);
    child_ = -1;
  }

  std::optional<procfs::ProcFs> proc_;
  pid_t child_ = -1;
};

using Pids = std::vector<pid_t>;

TEST_F(EndedProcessesTest, AListedProcessIsReadAgainWhenItDiesAndWhenItIsReaped) {
  EndedProcesses e;
  const auto alive = view_now();
  EXPECT_EQ(e.moved(*proc_, alive, {child_}), Pids{});  // nothing moved: no read again
  const pid_t pid = child_;
  ASSERT_TRUE(kill_to_zombie());
  EXPECT_EQ(e.moved(*proc_, alive, {pid}), Pids{pid});
  const auto zombie = view_now();
  EXPECT_EQ(e.moved(*proc_, zombie, {pid}), Pids{});
  reap();
  EXPECT_EQ(e.moved(*proc_, zombie, {pid}), Pids{pid});
}

TEST_F(EndedProcessesTest, AZombieOfTheViewIsReadAgainOnceReapedListedOrNot) {
  EndedProcesses e;
  const pid_t pid = child_;
  ASSERT_TRUE(kill_to_zombie());
  const auto zombie = view_now();
  EXPECT_EQ(e.moved(*proc_, zombie, {}), Pids{});
  reap();
  EXPECT_EQ(e.moved(*proc_, zombie, {}), Pids{pid});
}

TEST_F(EndedProcessesTest, AProcessSeenEndingIsReadAgainUntilGone) {
  EndedProcesses e;
  const auto alive = view_now();
  const pid_t pid = child_;
  EXPECT_EQ(e.moved(*proc_, alive, {}), Pids{});  // not listed, not seen ending: not asked
  ASSERT_TRUE(kill_to_zombie());
  EXPECT_EQ(e.moved(*proc_, alive, {}), Pids{}) << "a scan would see it; nothing said so";
  e.exited({pid});
  EXPECT_EQ(e.moved(*proc_, alive, {}), Pids{pid});
  const auto zombie = view_now();
  EXPECT_EQ(e.moved(*proc_, zombie, {}), Pids{});
  reap();
  EXPECT_EQ(e.moved(*proc_, zombie, {}), Pids{pid});
}

// A scan that reads a process in do_exit() (PF_EXITING: its files closed, its environ gone, not
// a zombie yet) holds it so; an event that says it ended may never come (the connector's queue
// overflowed). The kernel says it is ending: it is read again until /proc shows it dead.
TEST_F(EndedProcessesTest, AProcessReadWhileExitingIsReadAgainWithoutAnEvent) {
  EndedProcesses e;
  const auto alive = view_now();
  ASSERT_EQ(alive.processes.size(), 1u);
  core::HostProcess read_exiting = alive.processes[0];
  read_exiting.stat.state = 'R';
  read_exiting.stat.flags |= 0x4;  // PF_EXITING, as read in do_exit()
  core::ProcView exiting_view;
  exiting_view.processes = {read_exiting};
  const pid_t pid = child_;
  ASSERT_TRUE(kill_to_zombie());
  EXPECT_EQ(e.moved(*proc_, exiting_view, {}), Pids{pid});
  // Read again: a zombie now, asked as such; a live process of the view is not asked.
  const auto zombie = view_now();
  EXPECT_EQ(e.moved(*proc_, zombie, {}), Pids{});
  reap();
  EXPECT_EQ(e.moved(*proc_, zombie, {}), Pids{pid});
}

// A child whose main thread has exited (as pthread_exit() in main does) while another thread
// runs on in pause(); killed and reaped when it goes.
class ExitedLeader {
 public:
  ExitedLeader() {
    pid_ = ::fork();
    if (pid_ == 0) {
      pthread_t t;
      if (::pthread_create(&t, nullptr, &ExitedLeader::pause_forever, nullptr) != 0) ::_exit(1);
      // The bare system call: pthread_exit() would unwind this forked copy of the test program.
      ::syscall(SYS_exit, 0);
    }
  }
  ~ExitedLeader() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  ExitedLeader(const ExitedLeader&) = delete;
  ExitedLeader& operator=(const ExitedLeader&) = delete;
  pid_t pid() const { return pid_; }
  // Until /proc reads its leader exited and its thread asleep (a loaded machine may take long).
  bool settled(const procfs::ProcFs& proc) const {
    for (int i = 0; i < 12000; ++i) {
      auto st = proc.read_stat(pid_);
      if (st && *st && (*st)->leader_exited && (*st)->state == 'S') return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }
  // SIGKILLs it and waits until it is dead, not reaped: a zombie.
  bool kill_to_zombie() const {
    siginfo_t info{};
    return ::kill(pid_, SIGKILL) == 0 &&
           ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOWAIT) == 0;
  }

 private:
  static void* pause_forever(void*) {
    for (;;) ::pause();
  }
  pid_t pid_ = -1;
};

// A process whose main thread has exited runs on in its other threads: the leader's PF_EXITING
// is no end of the process, so it is not read again at each collection (one stat and a task
// listing each, for as long as it runs). Its end is the kernel's to report, as any process's.
TEST_F(EndedProcessesTest, AProcessWhoseLeaderAloneExitedIsNotReadAgain) {
  ExitedLeader job;
  ASSERT_GT(job.pid(), 0);
  ASSERT_TRUE(job.settled(*proc_)) << "its leader never read exited with its thread asleep";
  core::ProcView view;
  auto st = proc_->read_stat(job.pid());
  ASSERT_TRUE(st && *st);
  EXPECT_FALSE(exiting(**st));
  core::HostProcess p;
  p.stat = **st;
  view.processes = {p};
  EndedProcesses e;
  EXPECT_EQ(e.moved(*proc_, view, {}), Pids{});
  // Dead now: a process read again would show it; this one is not asked.
  ASSERT_TRUE(job.kill_to_zombie());
  EXPECT_EQ(e.moved(*proc_, view, {}), Pids{}) << "read again though only its leader had exited";
  e.exited({job.pid()});  // the kernel reports its end
  EXPECT_EQ(e.moved(*proc_, view, {}), Pids{job.pid()});
}

TEST_F(EndedProcessesTest, AnExitOfAProcessThatRunsOnIsForgotten) {
  EndedProcesses e;
  const auto alive = view_now();
  e.exited({child_});  // one thread's exit, say: the process runs on
  EXPECT_EQ(e.moved(*proc_, alive, {}), Pids{});
  ASSERT_TRUE(kill_to_zombie());
  EXPECT_EQ(e.moved(*proc_, alive, {}), Pids{}) << "forgotten: not asked again";
}

}  // namespace
}  // namespace gpureap::engine

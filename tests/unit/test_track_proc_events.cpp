// ProcEvents (src/track/proc_events.cpp) against the kernel's proc connector: the forks and
// exits of a child and a grandchild of this test, threads left out, and the refusal without
// CAP_NET_ADMIN. Every other process of the machine is reported too, so each check looks at
// the pids it made.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/listed_since.h"
#include "procfs/proc_fs.h"
#include "track/proc_events.h"
#include "unprivileged_child.h"

namespace gpureap::track {
namespace {

using ProcEventList = std::vector<ProcEvent>;

std::string describe(const ProcEventList& events) {
  std::string s;
  for (const auto& e : events)
    s += e.kind == ProcEvent::Kind::Fork
             ? "fork " + std::to_string(e.pid) + " from " + std::to_string(e.parent) + "\n"
         : e.kind == ProcEvent::Kind::Exit
             ? "exit " + std::to_string(e.pid) + "\n"
             : "thread exit " + std::to_string(e.thread) + " of " + std::to_string(e.pid) + "\n";
  return s.empty() ? "(none)" : s;
}

bool is(const ProcEvent& e, ProcEvent::Kind kind, pid_t pid, pid_t parent = 0) {
  return e.kind == kind && e.pid == pid && e.parent == parent;
}

class ProcEventsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto p = ProcEvents::open();
    if (!p && p.error().message.find("CAP_NET_ADMIN") != std::string::npos)
      GTEST_SKIP() << p.error().text();
    ASSERT_TRUE(p) << p.error().text();
    events_.emplace(std::move(*p));
  }

  // Reads until an event satisfies `last`, waiting for the socket up to a minute (a loaded
  // machine); keeps only the events `keep` selects (the rest of the machine forks and exits too).
  ProcEventList collect(const std::function<bool(const ProcEvent&)>& keep,
                        const std::function<bool(const ProcEvent&)>& last) {
    ProcEventList got;
    bool done = false;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!done && std::chrono::steady_clock::now() < deadline) {
      pollfd p{events_->fd(), POLLIN, 0};
      ::poll(&p, 1, 100);
      auto batch = events_->read();
      EXPECT_FALSE(batch.overflow);
      for (const auto& e : batch.events) {
        if (keep(e)) got.push_back(e);
        done = done || last(e);
      }
    }
    EXPECT_TRUE(done) << "the last awaited event did not come; got:\n" << describe(got);
    return got;
  }

  std::optional<ProcEvents> events_;
};

TEST_F(ProcEventsTest, ForksAndExitsOfChildAndGrandchild) {
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    pid_t grandchild = ::fork();
    if (grandchild == 0) ::_exit(0);
    ::waitpid(grandchild, nullptr, 0);
    ssize_t n = ::write(pipe_fds[1], &grandchild, sizeof grandchild);
    ::_exit(n == sizeof grandchild ? 0 : 1);
  }
  ::close(pipe_fds[1]);
  pid_t grandchild = 0;
  ASSERT_EQ(::read(pipe_fds[0], &grandchild, sizeof grandchild), ssize_t(sizeof grandchild));
  ::close(pipe_fds[0]);
  ::waitpid(child, nullptr, 0);

  auto got = collect(
      [&](const ProcEvent& e) {
        return e.pid == child || e.pid == grandchild ||
               (e.pid == ::getpid() && e.kind == ProcEvent::Kind::Exit);
      },
      [&](const ProcEvent& e) { return is(e, ProcEvent::Kind::Exit, child); });
  // The kernel sends a fork's event before the new process runs and an exit's before the
  // parent can reap it: this order is causal.
  ASSERT_EQ(got.size(), 4u) << describe(got);
  EXPECT_TRUE(is(got[0], ProcEvent::Kind::Fork, child, ::getpid())) << describe(got);
  EXPECT_TRUE(is(got[1], ProcEvent::Kind::Fork, grandchild, child)) << describe(got);
  EXPECT_TRUE(is(got[2], ProcEvent::Kind::Exit, grandchild)) << describe(got);
  EXPECT_TRUE(is(got[3], ProcEvent::Kind::Exit, child)) << describe(got);
}

TEST_F(ProcEventsTest, AThreadsExitIsNoProcesssExit) {
  std::atomic<pid_t> tid{0};
  std::thread([&] { tid = static_cast<pid_t>(::syscall(SYS_gettid)); }).join();
  // A forked child after it, as a marker: once its exit is in, the thread's events would be.
  pid_t marker = ::fork();
  if (marker == 0) ::_exit(0);
  ASSERT_GT(marker, 0);
  ::waitpid(marker, nullptr, 0);

  pid_t self = ::getpid();
  auto got = collect(
      [&](const ProcEvent& e) {
        return e.pid == tid || e.pid == self || e.pid == marker || e.parent == self;
      },
      [&](const ProcEvent& e) { return is(e, ProcEvent::Kind::Exit, marker); });
  // The thread's creation is no fork; its end is a thread's, of this process.
  ASSERT_EQ(got.size(), 3u) << "thread " << tid << ":\n" << describe(got);
  EXPECT_TRUE(got[0].kind == ProcEvent::Kind::ThreadExit && got[0].pid == self &&
              got[0].thread == tid)
      << describe(got);
  EXPECT_TRUE(is(got[1], ProcEvent::Kind::Fork, marker, self)) << describe(got);
  EXPECT_TRUE(is(got[2], ProcEvent::Kind::Exit, marker)) << describe(got);
}

// In a forked child: starts a thread that runs `body`, then runs `leader` on the main thread.
// (The child is single-threaded after fork, so it may start threads.)
pid_t fork_with_thread(void* (*body)(void*), const std::function<void()>& leader) {
  pid_t child = ::fork();
  if (child != 0) return child;
  pthread_t t;
  if (::pthread_create(&t, nullptr, body, nullptr) != 0) ::_exit(1);
  leader();
  ::_exit(0);
}

// In a forked child: the state letter of its leader thread, read with system calls alone (a
// thread of a forked copy of the test program allocates nothing).
char own_leader_state() {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/task/%d/stat", ::getpid(), ::getpid());
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return '?';
  char text[512];
  const ssize_t n = ::read(fd, text, sizeof text - 1);
  ::close(fd);
  if (n <= 0) return '?';
  text[n] = '\0';
  const char* close = std::strrchr(text, ')');
  return close && close[1] == ' ' && close[2] ? close[2] : '?';
}

// Polls until the leader's state is `state` (at most a minute).
void until_leader_is(char state) {
  for (int i = 0; i < 60000 && own_leader_state() != state; ++i) ::usleep(1000);
}

// Ends once the leader has exited (its stat reads Z): the process's last thread.
void* end_after_the_leader(void*) {
  until_leader_is('Z');
  return nullptr;
}

// A leader thread that pthread_exit()s: the kernel reports the leader's exit (pid == tgid)
// while the process runs on, its leader a zombie with a live thread; the process's end is its
// last thread's exit.
TEST_F(ProcEventsTest, ALeadersPthreadExitIsReportedAsTheLeadersExitBeforeTheProcessEnds) {
  // The bare system call, as pthread_exit() makes it (which would unwind this forked copy of the
  // test program through the test framework's frames).
  pid_t child = fork_with_thread(end_after_the_leader, [] { ::syscall(SYS_exit, 0); });
  ASSERT_GT(child, 0);
  auto got =
      collect([&](const ProcEvent& e) { return e.pid == child && e.kind != ProcEvent::Kind::Fork; },
              [&](const ProcEvent& e) {
                // Its own thread's: the rest of the machine's threads end too.
                return e.kind == ProcEvent::Kind::ThreadExit && e.pid == child;
              });
  ::waitpid(child, nullptr, 0);
  ASSERT_EQ(got.size(), 2u) << describe(got);
  EXPECT_TRUE(is(got[0], ProcEvent::Kind::Exit, child)) << describe(got);
  EXPECT_EQ(got[1].kind, ProcEvent::Kind::ThreadExit) << describe(got);
  EXPECT_NE(got[1].thread, child) << describe(got);
}

// Once the leader waits in pause(), execs.
void* exec_true(void*) {
  until_leader_is('S');
  ::execl("/bin/true", "true", static_cast<char*>(nullptr));
  ::_exit(127);
}

// A non-leader thread's exec(): the kernel reports the old leader's exit, and the process runs
// the new program under the same PID; its own end is a second exit of that PID.
TEST_F(ProcEventsTest, AnExecFromAThreadIsReportedAsTheLeadersExit) {
  pid_t child = fork_with_thread(exec_true, [] {
    for (;;) ::pause();
  });
  ASSERT_GT(child, 0);
  int exits = 0;
  auto got = collect(
      [&](const ProcEvent& e) { return e.pid == child && e.kind != ProcEvent::Kind::Fork; },
      [&](const ProcEvent& e) { return is(e, ProcEvent::Kind::Exit, child) && ++exits == 2; });
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "it ran /bin/true: " << status;
  ASSERT_EQ(got.size(), 2u) << describe(got);
  EXPECT_TRUE(is(got[0], ProcEvent::Kind::Exit, child)) << describe(got);
  EXPECT_TRUE(is(got[1], ProcEvent::Kind::Exit, child)) << describe(got);
}

// An exit carries how the process ended, as waitpid(2) reports it: a rank's SIGKILL, a
// failing rank's exit(3).
TEST_F(ProcEventsTest, AnExitSaysHowTheProcessEnded) {
  pid_t killed = ::fork();
  if (killed == 0)
    for (;;) ::pause();
  ASSERT_GT(killed, 0);
  pid_t failed = ::fork();
  if (failed == 0) ::_exit(3);
  ASSERT_GT(failed, 0);
  ::kill(killed, SIGKILL);
  int status = 0;
  ::waitpid(killed, &status, 0);
  ::waitpid(failed, nullptr, 0);
  int exits = 0;
  auto got = collect(
      [&](const ProcEvent& e) {
        return (e.pid == killed || e.pid == failed) && e.kind == ProcEvent::Kind::Exit;
      },
      [&](const ProcEvent& e) {
        return (is(e, ProcEvent::Kind::Exit, killed) || is(e, ProcEvent::Kind::Exit, failed)) &&
               ++exits == 2;
      });
  ASSERT_EQ(got.size(), 2u) << describe(got);
  for (const auto& e : got) {
    if (e.pid == killed) {
      EXPECT_TRUE(WIFSIGNALED(e.wait_status) && WTERMSIG(e.wait_status) == SIGKILL)
          << e.wait_status;
      EXPECT_EQ(e.wait_status, status);
    } else {
      EXPECT_TRUE(WIFEXITED(e.wait_status) && WEXITSTATUS(e.wait_status) == 3) << e.wait_status;
    }
  }
}

// Each event says when the kernel reported it, which its batch gives in /proc's clock and unit of
// start times (ticks of CLOCK_BOOTTIME): a child's fork is reported once it has started, its exit
// after that, and both before it is reaped.
TEST_F(ProcEventsTest, AnEventSaysWhenTheKernelReportedItInTheClockOfStartTimes) {
  auto proc = procfs::ProcFs::open("/proc");
  ASSERT_TRUE(proc) << proc.error().text();
  int hold[2];
  ASSERT_EQ(::pipe(hold), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    char c;
    ::close(hold[1]);
    ::_exit(::read(hold[0], &c, 1) == 0 ? 0 : 1);  // ends when the pipe closes
  }
  ::close(hold[0]);
  auto stat = proc->read_stat(child);
  ::close(hold[1]);
  ::waitpid(child, nullptr, 0);
  const uint64_t reaped = engine::boot_ticks_now();
  ASSERT_TRUE(stat && *stat);
  const uint64_t started = (*stat)->start_ticks;

  std::optional<uint64_t> forked, exited;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!exited && std::chrono::steady_clock::now() < deadline) {
    pollfd p{events_->fd(), POLLIN, 0};
    ::poll(&p, 1, 100);
    const ProcEvents::Batch batch = events_->read();
    for (const auto& e : batch.events) {
      if (is(e, ProcEvent::Kind::Fork, child, ::getpid())) forked = batch.boot_ticks(e);
      if (is(e, ProcEvent::Kind::Exit, child)) exited = batch.boot_ticks(e);
    }
  }
  ASSERT_TRUE(forked && exited) << "the fork or the exit of " << child << " did not come";
  EXPECT_LE(started, *forked);
  EXPECT_LE(*forked, *exited);
  EXPECT_LE(*exited, reaped);
}

TEST_F(ProcEventsTest, MovedFromReadsNothing) {
  ProcEvents moved = std::move(*events_);
  EXPECT_EQ(events_->fd(), -1);
  EXPECT_TRUE(events_->read().events.empty());
  EXPECT_GE(moved.fd(), 0);
}

// Whether `events` reports the fork of a child forked now, within a minute.
bool sees_a_fork(ProcEvents& events) {
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{events.fd(), POLLIN, 0};
    ::poll(&p, 1, 100);
    for (const auto& e : events.read().events)
      if (is(e, ProcEvent::Kind::Fork, child, ::getpid())) return true;
  }
  return false;
}

// Kernels before 6.6 refuse a listener without CAP_NET_ADMIN; later ones take any process of
// the initial namespaces. Either way the outcome must be whole: the refusal names the
// capability, or the subscription works.
TEST(ProcEvents, WithoutPrivilegeOpenSaysWhatIsNeededOrWorks) {
  std::string said = testing::run_unprivileged([] {
    auto p = ProcEvents::open();
    if (!p) return p.error().text();
    return std::string(sees_a_fork(*p) ? "listening" : "opened but deaf");
  });
  if (said == "listening") return;  // this kernel lets anyone listen
  EXPECT_NE(said.find("CAP_NET_ADMIN"), std::string::npos) << said;
  EXPECT_NE(said.find("run the daemon as root"), std::string::npos) << said;
}

}  // namespace
}  // namespace gpureap::track

// The holder tracker's bookkeeping: what it asks the engine to scan, and what a full scan
// finds that events missed. Runs on a stand-in GPU file; the kernel's events need root, and an
// unprivileged start must fail saying so (the daemon then scans).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <thread>

#include "daemon/holder_tracker.h"

namespace gpureap::daemon {
namespace {

class HolderTrackerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpureap-tracker-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    file_ = dir_ + "/nvidia0";
    std::ofstream(file_) << "";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::shared_ptr<HolderTracker> start() {
    auto t = HolderTracker::start({file_}, proc(), [this] { ++wakes_; });
    if (!t) return nullptr;
    return *t;
  }

  static procfs::ProcFs proc() {
    auto p = procfs::ProcFs::open("/proc");
    if (!p) throw std::runtime_error(p.error().text());
    return *p;
  }

  static core::HostProcess process(pid_t pid, uint64_t start, bool holder) {
    core::HostProcess p;
    p.stat.pid = pid;
    p.stat.start_ticks = start;
    if (holder) p.devices.push_back({"/dev/nvidia0", "nvidia", {}, true, {3}, {}});
    return p;
  }

  std::string dir_, file_;
  std::atomic<int> wakes_{0};
};

// Kills and reaps the children a test forked (those started: nonzero), however it returns.
struct Reaped {
  std::vector<pid_t*> pids;
  ~Reaped() {
    for (pid_t* pid : pids)
      if (*pid > 0) {
        ::kill(*pid, SIGKILL);
        ::waitpid(*pid, nullptr, 0);
      }
  }
};

// Polls `done` every 10 ms, up to a minute: a loaded machine (a sanitizer build) reads events
// late, and the bound costs time only when the test fails anyway.
template <class F>
bool soon(F done) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (!done() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return done();
}

// Reads exactly `size` bytes of `fd` within 60 s: a child that hung or died (the test keeps the
// pipe's write end, so no end of file comes) fails the test instead of stopping it.
bool read_within(int fd, void* buf, size_t size) {
  auto* at = static_cast<char*>(buf);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (size > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    const ssize_t n = ::read(fd, at, size);
    if (n <= 0) return false;
    at += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// Whether the tracker asks for `pid` to be read within soon()'s bound. take() hands each request
// out once, so what it asked for is kept across the polls.
bool asked_for(HolderTracker& t, pid_t pid) {
  bool asked = false;
  return soon([&] {
    auto r = t.take();
    asked = asked || std::find(r.pids.begin(), r.pids.end(), pid) != r.pids.end();
    return asked;
  });
}

// The tests of forks: a tracker that follows them (root, and the proc connector).
class HolderTrackerForkTest : public HolderTrackerTest {
 protected:
  void SetUp() override {
    HolderTrackerTest::SetUp();
    if (::geteuid() != 0) GTEST_SKIP() << "needs root";
    tracker_ = start();
    ASSERT_NE(tracker_, nullptr);
    if (!tracker_->follows_forks()) GTEST_SKIP() << tracker_->forks_unavailable().value_or("");
  }

  // Waits until the tracker has read the process events the kernel queued so far: a process of
  // its view ends now, and the tracker reads that end after them.
  void read_events_so_far() {
    int hold[2];
    ASSERT_EQ(::pipe(hold), 0);
    pid_t sentinel = ::fork();
    if (sentinel == 0) {
      char c;
      ::close(hold[1]);
      ::_exit(::read(hold[0], &c, 1) == 0 ? 0 : 1);  // ends when the pipe closes
    }
    ::close(hold[0]);
    core::ProcView view;
    view.processes = {process(sentinel, 1, false)};
    tracker_->scanned(view, false);
    ::close(hold[1]);
    ASSERT_EQ(::waitpid(sentinel, nullptr, 0), sentinel);
    std::vector<pid_t> ended;
    ASSERT_TRUE(soon([&] {
      auto r = tracker_->take();
      ended.insert(ended.end(), r.exited.begin(), r.exited.end());
      return std::find(ended.begin(), ended.end(), sentinel) != ended.end();
    })) << "the end of "
        << sentinel << " was not read";
  }

  std::shared_ptr<HolderTracker> tracker_;

 public:
  // Forks a child that runs `body` once the tracker, stopped across the fork and started again,
  // watches: the child may then start threads. A child forked beside the tracker's thread can
  // hang in pthread_create(), on a lock (a sanitizer's allocator's) that thread held at the fork.
  pid_t fork_alone(const std::function<void()>& body) {
    int gate[2];
    if (::pipe(gate) != 0) return -1;
    tracker_.reset();  // joins its thread
    const pid_t pid = ::fork();
    if (pid == 0) {
      char c;
      ::close(gate[1]);
      if (::read(gate[0], &c, 1) != 1) ::_exit(1);
      body();
      ::_exit(1);
    }
    ::close(gate[0]);
    tracker_ = start();
    if (tracker_ && ::write(gate[1], "g", 1) != 1) tracker_.reset();
    ::close(gate[1]);
    return pid;
  }
  // The tracker; null when it could not be started again.
  HolderTracker* tracker() const { return tracker_.get(); }
};

TEST_F(HolderTrackerTest, AnOpenAsksForAScanOfTheOpenerAndWakesTheEngine) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root";
  auto t = start();
  ASSERT_NE(t, nullptr);
  pid_t child = ::fork();
  if (child == 0) {
    int fd = ::open(file_.c_str(), O_RDONLY);
    ::_exit(fd >= 0 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  // The open and the final close (its exit) come as events of their own, in one batch or two.
  engine::ScanRequest asked;
  soon([&] {
    auto r = t->take();
    asked.pids.insert(asked.pids.end(), r.pids.begin(), r.pids.end());
    return !asked.pids.empty() && t->counters().closes > 0;
  });
  EXPECT_NE(std::find(asked.pids.begin(), asked.pids.end(), child), asked.pids.end());
  EXPECT_GE(wakes_.load(), 1);
  auto c = t->counters();
  EXPECT_GE(c.opens, 1u);
  EXPECT_GE(c.closes, 1u);  // its exit released the file
  auto releases = t->releases();
  ASSERT_FALSE(releases.empty());
  EXPECT_EQ(releases.back().pid, child);
  EXPECT_EQ(releases.back().path, file_);
}

TEST_F(HolderTrackerTest, AFullScanCountsWhatEventsMissedButNotNewOrTouchedProcesses) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root";
  auto t = start();
  ASSERT_NE(t, nullptr);
  core::ProcView first;
  first.processes = {process(10, 100, false), process(11, 110, true), process(12, 120, false)};
  t->scanned(first, true);
  EXPECT_EQ(t->counters().drift, 0u);

  core::ProcView second;
  second.processes = {
      process(10, 100, true),   // held nothing, now holds: an open events missed
      process(11, 110, false),  // let go unseen
      process(12, 999, true),   // a new process with a reused PID: found as new, no drift
      process(13, 130, true),   // new: found by the scan, no drift
  };
  t->scanned(second, false);  // an event-driven rescan does not count drift
  EXPECT_EQ(t->counters().drift, 0u);
  t->scanned(first, false);
  t->scanned(second, true);  // a full scan: 10 and 11 changed with no event naming them
  EXPECT_EQ(t->counters().drift, 2u);
}

TEST_F(HolderTrackerForkTest, AHoldersChildWhoseParentExitsIsRecordedWithThatParentUntilItEnds) {
  auto t = tracker_;
  int go[2], back[2];
  ASSERT_EQ(::pipe(go), 0);
  ASSERT_EQ(::pipe(back), 0);
  pid_t parent = ::fork();
  if (parent == 0) {
    int fd = ::open(file_.c_str(), O_RDONLY);
    char c;
    if (fd < 0 || ::read(go[0], &c, 1) != 1) ::_exit(1);  // forks once its open was seen
    pid_t child = ::fork();
    if (child == 0)
      for (;;) ::pause();
    ::_exit(::write(back[1], &child, sizeof child) == sizeof child ? 0 : 1);
  }
  ASSERT_TRUE(soon([&] { return t->counters().opens > 0; }));
  ASSERT_EQ(::write(go[1], "x", 1), 1);
  pid_t child = 0;
  ASSERT_TRUE(read_within(back[0], &child, sizeof child));
  int status = 0;
  ASSERT_EQ(::waitpid(parent, &status, 0), parent);
  for (int fd : {go[0], go[1], back[0], back[1]}) ::close(fd);
  EXPECT_TRUE(soon([&] {
    return t->exited_parents() == std::map<pid_t, pid_t>{{child, parent}};
  })) << t->exited_parents().size();
  ::kill(child, SIGKILL);  // reparented: init reaps it
  EXPECT_TRUE(soon([&] { return t->exited_parents().empty(); }));
}

// A holder that forks a child (followed as a holder) and then, on `go`, ends its leader thread
// while the process lives on: `leader_ends` runs on the main thread of the holder.
struct LeaderEndScene {
  int go[2] = {-1, -1}, back[2] = {-1, -1};
  pid_t parent = -1, child = -1;
  ~LeaderEndScene() {
    for (pid_t p : {child, parent})
      if (p > 0) ::kill(p, SIGKILL);
    if (parent > 0) ::waitpid(parent, nullptr, 0);
    for (int fd : {go[0], go[1], back[0], back[1]})
      if (fd >= 0) ::close(fd);
  }
};

// Runs in the forked holder: opens `file`, forks its child once told, then ends its leader with
// `leader_ends` once told again.
[[noreturn]] void holder_body(const std::string& file, LeaderEndScene& sc,
                              void (*leader_ends)(int)) {
  int fd = ::open(file.c_str(), O_RDONLY);  // not close-on-exec: an exec keeps holding it
  char c;
  if (fd < 0 || ::read(sc.go[0], &c, 1) != 1) ::_exit(1);
  pid_t child = ::fork();
  if (child == 0)
    for (;;) ::pause();
  if (::write(sc.back[1], &child, sizeof child) != sizeof child || ::read(sc.go[0], &c, 1) != 1)
    ::_exit(1);
  leader_ends(sc.go[0]);
  ::_exit(1);
}

int g_thread_go = -1;  // in the forked holder: what its thread waits on

void* exec_sleep(void*) {
  ::execl("/bin/sleep", "sleep", "1000", static_cast<char*>(nullptr));
  ::_exit(127);
}

// A thread other than the leader exec()s: the process runs sleep under the same PID.
void exec_from_a_thread(int) {
  pthread_t t;
  if (::pthread_create(&t, nullptr, exec_sleep, nullptr) != 0) ::_exit(1);
  for (;;) ::pause();
}

void* wait_then_end(void*) {
  char c;
  (void)!::read(g_thread_go, &c, 1);
  ::_exit(0);  // the whole process ends now
}

// The leader ends its thread alone, as pthread_exit() does; a thread runs on until told to
// end the process. (The bare system call: pthread_exit() would unwind this forked copy of the
// test program through the test framework's frames.)
void leader_pthread_exit(int go) {
  g_thread_go = go;
  pthread_t t;
  if (::pthread_create(&t, nullptr, wait_then_end, nullptr) != 0) ::_exit(1);
  ::syscall(SYS_exit, 0);
}

// Sets the scene up to the holder's fork followed; the test then writes go to end the leader.
// The holder starts a thread: it is forked alone.
void stage(HolderTrackerForkTest& test, const std::string& file, LeaderEndScene& sc,
           void (*leader_ends)(int)) {
  ASSERT_EQ(::pipe(sc.go), 0);
  ASSERT_EQ(::pipe(sc.back), 0);
  sc.parent = test.fork_alone([&] { holder_body(file, sc, leader_ends); });
  ASSERT_GT(sc.parent, 0);
  ASSERT_NE(test.tracker(), nullptr);
  HolderTracker& t = *test.tracker();
  ASSERT_TRUE(asked_for(t, sc.parent));
  ASSERT_EQ(::write(sc.go[1], "x", 1), 1);
  ASSERT_TRUE(read_within(sc.back[0], &sc.child, sizeof sc.child));
  ASSERT_TRUE(asked_for(t, sc.child)) << "the fork of the holder was not followed";
}

// Ends the holder's leader thread and waits until the tracker has read its exit: it asks for
// the holder to be read again, whether or not it takes the exit for the process's.
void end_leader(HolderTracker& t, LeaderEndScene& sc) {
  ASSERT_EQ(::write(sc.go[1], "x", 1), 1);
  ASSERT_TRUE(asked_for(t, sc.parent)) << "the leader's exit was not read";
}

// A holder whose non-main thread exec()s: the kernel reports its old leader's exit, but the
// process runs on under its PID, still its child's parent: nothing is recorded. Its real end
// later is. The old leader's exit names the PID, or, when the exec'ing thread has taken the PID
// by then, the thread ID it gave up in exchange: the tracker reads every event up to the exec's
// end, whichever it was.
TEST_F(HolderTrackerForkTest, AnExecFromAThreadOfAParentIsNoExit) {
  LeaderEndScene sc;
  stage(*this, file_, sc, exec_from_a_thread);
  ASSERT_EQ(::write(sc.go[1], "x", 1), 1);
  ASSERT_TRUE(soon([&] {
    std::ifstream comm("/proc/" + std::to_string(sc.parent) + "/comm");
    std::string name;
    return std::getline(comm, name) && name == "sleep";
  })) << "it did not exec";
  read_events_so_far();
  EXPECT_EQ(tracker_->exited_parents(), (std::map<pid_t, pid_t>{}));
  ::kill(sc.parent, SIGKILL);
  EXPECT_TRUE(soon([&] {
    return tracker_->exited_parents() == std::map<pid_t, pid_t>{{sc.child, sc.parent}};
  })) << tracker_->exited_parents().size();
}

// A holder whose main thread pthread_exit()s while another thread runs: the kernel reports the
// leader's exit, but the process lives: nothing is recorded until its last thread ends.
TEST_F(HolderTrackerForkTest, ALeadersPthreadExitIsNoExitUntilTheLastThreadEnds) {
  LeaderEndScene sc;
  stage(*this, file_, sc, leader_pthread_exit);
  end_leader(*tracker_, sc);
  EXPECT_EQ(tracker_->exited_parents(), (std::map<pid_t, pid_t>{}));
  ASSERT_EQ(::write(sc.go[1], "x", 1), 1);  // its thread ends the process
  EXPECT_TRUE(soon([&] {
    return tracker_->exited_parents() == std::map<pid_t, pid_t>{{sc.child, sc.parent}};
  })) << tracker_->exited_parents().size();
}

namespace leaderless_holder {

int gpu_fd = -1;  // in the forked holder: its GPU file
int commands = -1, answers = -1;

// The holder's thread once its leader has exited: closes the GPU file ('c'), forks a child that
// pauses ('f'; its PID answers), or ends the process (anything else).
void* serve(void*) {
  char c;
  while (::read(commands, &c, 1) == 1) {
    if (c == 'c') {
      if (::close(gpu_fd) != 0 || ::write(answers, "k", 1) != 1) break;
    } else if (c == 'f') {
      pid_t child = ::fork();
      if (child == 0)
        for (;;) ::pause();
      if (::write(answers, &child, sizeof child) != sizeof child) break;
    } else {
      break;
    }
  }
  ::_exit(0);
}

// Opens `file`, and on the first command ends its leader as pthread_exit() does (the bare
// system call: pthread_exit() would unwind this forked copy of the test program), leaving its
// thread to serve the others.
[[noreturn]] void run(const std::string& file, int go, int back) {
  gpu_fd = ::open(file.c_str(), O_RDONLY);
  commands = go;
  answers = back;
  char c;
  pthread_t t;
  if (gpu_fd < 0 || ::read(go, &c, 1) != 1 || ::pthread_create(&t, nullptr, serve, nullptr) != 0)
    ::_exit(1);
  ::syscall(SYS_exit, 0);
  ::_exit(1);
}

}  // namespace leaderless_holder

// A holder whose main thread has exited runs on in its thread, and closes its GPU file there:
// the leader's end is not the process's (its stat is its running thread's, not exiting), so a
// scan that reads it holding nothing drops it as a holder. Its fork is not followed and its end
// is no holder's, as for any process that let go of its GPU files.
TEST_F(HolderTrackerForkTest, AHolderWhoseLeaderExitedIsNoHolderOnceItClosesItsFiles) {
  int go[2], back[2];
  ASSERT_EQ(::pipe(go), 0);
  ASSERT_EQ(::pipe(back), 0);
  // It starts a thread: forked alone.
  pid_t holder = fork_alone([&] { leaderless_holder::run(file_, go[0], back[1]); });
  pid_t child = 0;
  Reaped reaped{{&holder, &child}};
  ASSERT_GT(holder, 0);
  ASSERT_NE(tracker_, nullptr);
  ASSERT_TRUE(asked_for(*tracker_, holder)) << "its open was not read";
  auto st = proc().read_stat(holder);
  ASSERT_TRUE(st && *st);
  const uint64_t start = (*st)->start_ticks;
  core::ProcView view;
  view.processes = {process(holder, start, true)};
  tracker_->scanned(view, false);  // a scan saw it holding: its open is confirmed
  ASSERT_EQ(::write(go[1], "x", 1), 1);
  ASSERT_TRUE(asked_for(*tracker_, holder)) << "its leader's exit was not read";

  const uint64_t closes = tracker_->counters().closes;
  char ack = 0;
  ASSERT_EQ(::write(go[1], "c", 1), 1);
  ASSERT_TRUE(read_within(back[0], &ack, 1));
  ASSERT_TRUE(soon([&] { return tracker_->counters().closes > closes; }))
      << "its close was not read";
  tracker_->take();  // the collection that reads it takes what the events asked first
  // It reads as /proc shows it now: running on in its thread, holding nothing.
  core::HostProcess read = process(holder, start, false);
  ASSERT_TRUE(soon([&] {
    auto now = proc().read_stat(holder);
    if (now && *now) read.stat = **now;
    return read.stat.leader_exited;
  })) << "its leader never read exited";
  ASSERT_FALSE(read.stat.is_zombie());
  view.processes = {read};
  tracker_->scanned(view, false);

  const uint64_t forks = tracker_->counters().forks;
  ASSERT_EQ(::write(go[1], "f", 1), 1);
  ASSERT_TRUE(read_within(back[0], &child, sizeof child));
  ASSERT_EQ(::write(go[1], "e", 1), 1);  // its thread ends the process
  ASSERT_EQ(::waitpid(holder, nullptr, 0), holder);
  const pid_t ended = holder;
  holder = 0;
  for (int fd : {go[0], go[1], back[0], back[1]}) ::close(fd);
  // Its end is read (a process of the view: the engine reads it again), after its fork.
  std::vector<pid_t> exited;
  ASSERT_TRUE(soon([&] {
    auto r = tracker_->take();
    exited.insert(exited.end(), r.exited.begin(), r.exited.end());
    return std::find(exited.begin(), exited.end(), ended) != exited.end();
  })) << "its end was not read";
  EXPECT_EQ(tracker_->counters().forks, forks) << "the fork of a process holding nothing";
  EXPECT_EQ(tracker_->exited_parents(), (std::map<pid_t, pid_t>{}));
  EXPECT_EQ(tracker_->ends().count(ended), 0u) << "its end recorded as a holder's";
}

namespace leader_gone_before {

int g_end = -1;  // in the forked holder: what its thread waits on to end the process

void* end_when_told(void*) {
  char c;
  (void)!::read(g_end, &c, 1);
  ::_exit(0);  // the whole process ends now: the last thread's exit is its end
}

// Opens `file`, forks a child that pauses (its PID written to `back`), then ends its leader
// as pthread_exit() does (the bare system call: pthread_exit() would unwind this forked copy of
// the test program), leaving a thread that ends the process when `go` is written.
[[noreturn]] void run(const std::string& file, int go, int back) {
  if (::open(file.c_str(), O_RDONLY) < 0) ::_exit(1);
  pid_t child = ::fork();
  if (child == 0)
    for (;;) ::pause();
  g_end = go;
  pthread_t t;
  if (::write(back, &child, sizeof child) != sizeof child ||
      ::pthread_create(&t, nullptr, end_when_told, nullptr) != 0)
    ::_exit(1);
  ::syscall(SYS_exit, 0);
  ::_exit(1);
}

}  // namespace leader_gone_before

// A holder whose main thread had exited before the tracker began (a daemon started, or events
// lost, after its leader's pthread_exit()): no leader's exit is ever read for it, and its end
// is the exit of its last thread. A scan that reads it so makes that exit watched: its end is
// recorded as a holder's, and it is no holder after.
TEST_F(HolderTrackerTest, AHolderWhoseLeaderExitedBeforeTheTrackerHasItsEndRecorded) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root";
  int go[2], back[2];
  ASSERT_EQ(::pipe(go), 0);
  ASSERT_EQ(::pipe(back), 0);
  pid_t holder = ::fork();
  if (holder == 0) leader_gone_before::run(file_, go[0], back[1]);
  pid_t child = 0;
  Reaped reaped{{&holder, &child}};
  ASSERT_TRUE(read_within(back[0], &child, sizeof child));
  core::HostProcess read = process(holder, 0, true);
  ASSERT_TRUE(soon([&] {
    auto now = proc().read_stat(holder);
    if (now && *now) read.stat = **now;
    return read.stat.leader_exited;
  })) << "its leader never read exited";

  auto t = start();
  ASSERT_NE(t, nullptr);
  if (!t->follows_forks()) GTEST_SKIP() << t->forks_unavailable().value_or("");
  core::ProcView view;
  view.processes = {read, process(child, 1, true)};
  t->scanned(view, true);  // the daemon's first scan: it holds the GPU file

  ASSERT_EQ(::write(go[1], "e", 1), 1);  // its thread ends the process
  ASSERT_EQ(::waitpid(holder, nullptr, 0), holder);
  const pid_t ended = holder;
  holder = 0;
  for (int fd : {go[0], go[1], back[0], back[1]}) ::close(fd);
  EXPECT_TRUE(soon([&] { return t->ends().count(ended) > 0; }))
      << "the end of a holder whose leader had exited was never read";
  if (t->ends().count(ended)) {
    const auto lives = t->ends().at(ended);
    ASSERT_EQ(lives.size(), 1u);
    EXPECT_EQ(lives[0].start_ticks, read.stat.start_ticks);
    EXPECT_TRUE(lives[0].held);
  }
  std::vector<pid_t> exited;
  EXPECT_TRUE(soon([&] {
    auto r = t->take();
    exited.insert(exited.end(), r.exited.begin(), r.exited.end());
    return std::find(exited.begin(), exited.end(), ended) != exited.end();
  })) << "the engine was not asked to read it again";
}

// A holder killed: do_exit() closes its files before the kernel reports its exit, and a scan
// that reads it in between finds it holding nothing. Its exit, read after, is still a holder's
// end, with the time and the status the event gives.
TEST_F(HolderTrackerForkTest, AHolderReadWhileExitingHasItsEndRecordedByTheEvent) {
  pid_t holder = ::fork();
  if (holder == 0) {
    if (::open(file_.c_str(), O_RDONLY) < 0) ::_exit(1);
    for (;;) ::pause();
  }
  Reaped reaped{{&holder}};
  ASSERT_TRUE(asked_for(*tracker_, holder)) << "its open was not read";
  auto st = proc().read_stat(holder);
  ASSERT_TRUE(st && *st);
  core::ProcView view;
  view.processes = {process(holder, (*st)->start_ticks, true)};
  tracker_->scanned(view, false);  // a scan saw it holding: its open is confirmed
  // Then one read it in do_exit(): running, PF_EXITING, no GPU file.
  core::HostProcess exiting = process(holder, (*st)->start_ticks, false);
  exiting.stat.state = 'R';
  exiting.stat.flags |= 0x4;
  view.processes = {exiting};
  tracker_->scanned(view, false);
  ASSERT_EQ(::kill(holder, SIGKILL), 0);
  ASSERT_EQ(::waitpid(holder, nullptr, 0), holder);
  const pid_t ended = holder;
  holder = 0;
  ASSERT_TRUE(soon([&] { return tracker_->ends().count(ended) > 0; }))
      << "the end of a holder read while exiting was not recorded";
  const auto lives = tracker_->ends().at(ended);
  ASSERT_EQ(lives.size(), 1u);
  EXPECT_EQ(lives[0].start_ticks, (*st)->start_ticks);
  EXPECT_TRUE(lives[0].held);
  EXPECT_EQ(lives[0].wait_status, std::optional<int>(SIGKILL));
}

// The kernel reports a thread's exit before it releases the thread: /proc read at once may still
// count the last one, and no event follows. Played here on a /proc tree the test lays out: the
// holder's exit is read while the tree still shows a thread of it running, and its end is
// recorded once the tree shows it gone, with no event after.
TEST_F(HolderTrackerTest, AnEndReadBeforeTheKernelReleasedTheLastThreadIsCheckedAgain) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root";
  char tmpl[] = "/tmp/gpureap-tracker-proc-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string root = tmpl;
  auto fixture = procfs::ProcFs::open(root);
  ASSERT_TRUE(fixture) << fixture.error().text();
  auto started = HolderTracker::start({file_}, *fixture, [] {});
  ASSERT_TRUE(started) << started.error().text();
  auto t = *started;
  if (!t->follows_forks()) GTEST_SKIP() << t->forks_unavailable().value_or("");
  int go[2], back[2];
  ASSERT_EQ(::pipe(go), 0);
  ASSERT_EQ(::pipe(back), 0);
  pid_t child = 0;
  pid_t holder = ::fork();
  if (holder == 0) {
    char c;
    if (::open(file_.c_str(), O_RDONLY) < 0 || ::read(go[0], &c, 1) != 1) ::_exit(1);
    pid_t worker = ::fork();
    if (worker == 0)
      for (;;) ::pause();
    if (::write(back[1], &worker, sizeof worker) != sizeof worker) ::_exit(1);
    ::_exit(::read(go[0], &c, 1) == 1 ? 0 : 1);
  }
  Reaped reaped{{&holder, &child}};
  ASSERT_TRUE(asked_for(*t, holder));
  ASSERT_EQ(::write(go[1], "x", 1), 1);
  ASSERT_TRUE(read_within(back[0], &child, sizeof child));
  ASSERT_TRUE(asked_for(*t, child)) << "the fork of the holder was not followed";
  // What /proc shows while the kernel has not yet released the holder's last thread.
  const std::string dir = root + "/" + std::to_string(holder);
  auto stat = [&](const std::string& path, pid_t pid, char state, int threads) {
    std::filesystem::create_directories(path);
    std::ofstream(path + "/stat") << pid << " (holder) " << state << " 1 " << pid << " " << pid
                                  << " 0 -1 4 0 0 0 0 0 0 0 0 20 0 " << threads << " 0 99 0 0\n";
  };
  stat(dir, holder, 'Z', 2);
  stat(dir + "/task/" + std::to_string(holder), holder, 'Z', 2);
  stat(dir + "/task/" + std::to_string(holder + 1), holder + 1, 'R', 2);
  const pid_t ended = holder;
  ASSERT_EQ(::write(go[1], "x", 1), 1);
  ASSERT_EQ(::waitpid(holder, nullptr, 0), holder);
  holder = 0;
  // Its exit read (a holder's is asked for), while the tree still shows a thread running.
  ASSERT_TRUE(asked_for(*t, ended)) << "the holder's exit was not read";
  EXPECT_EQ(t->exited_parents(), (std::map<pid_t, pid_t>{}));
  std::filesystem::remove_all(dir);  // released: gone from /proc, and no event says so
  EXPECT_TRUE(soon([&] { return !t->exited_parents().empty(); }))
      << "an end read too early was never checked again";
  EXPECT_EQ(t->exited_parents().count(child), 1u);
  t->stop();
  std::filesystem::remove_all(root);
}

// Rounds of a trainer that opens the GPU file, forks its worker and exits at once, while a storm
// of opens keeps the tracker reading file events a gap apart (so the fork, and the exit, are
// read before the open): `check(round, trainer, worker)` after each, the worker killed then.
void trainers_in_a_storm(const std::string& file, int rounds,
                         const std::function<void(int, pid_t, pid_t)>& check) {
  struct Storm {
    pid_t pid = ::fork();
    ~Storm() {
      if (pid <= 0) return;
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  } storm;
  ASSERT_GE(storm.pid, 0);
  if (storm.pid == 0)
    for (;;) ::close(::open(file.c_str(), O_RDONLY));
  for (int round = 0; round < rounds; ++round) {
    int back[2];
    ASSERT_EQ(::pipe(back), 0);
    pid_t trainer = ::fork();
    if (trainer == 0) {
      int fd = ::open(file.c_str(), O_RDONLY);
      pid_t worker = ::fork();
      if (worker == 0)
        for (;;) ::pause();
      ::_exit(fd >= 0 && ::write(back[1], &worker, sizeof worker) == sizeof worker ? 0 : 1);
    }
    pid_t worker = 0;
    ASSERT_TRUE(read_within(back[0], &worker, sizeof worker));
    ::close(back[0]);
    ::close(back[1]);
    ASSERT_EQ(::waitpid(trainer, nullptr, 0), trainer);
    check(round, trainer, worker);
    ::kill(worker, SIGKILL);
  }
}

// The fork is read before the open, yet the worker is read again, every time.
TEST_F(HolderTrackerForkTest, AForkReadBeforeItsParentsOpenStillNamesTheChild) {
  auto t = tracker_;
  trainers_in_a_storm(file_, 10, [&](int round, pid_t, pid_t worker) {
    EXPECT_TRUE(asked_for(*t, worker))
        << "round " << round << ": the worker " << worker << " was never asked for";
  });
}

// The trainer's exit is read before its open, yet once the open is read the worker is a holder
// whose parent has exited (an orphan), every time.
TEST_F(HolderTrackerForkTest, ATrainerGoneBeforeItsOpenIsReadLeavesAnOrphan) {
  auto t = tracker_;
  trainers_in_a_storm(file_, 5, [&](int round, pid_t trainer, pid_t worker) {
    EXPECT_TRUE(soon([&] {
      auto parents = t->exited_parents();
      auto it = parents.find(worker);
      return it != parents.end() && it->second == trainer;
    })) << "round "
        << round << ": the worker " << worker << " is not known as the orphan of " << trainer;
  });
}

// The kernel reports an open before the fd is in the opener's table: a scan answering the
// event at once can find the opener holding nothing (the collection that beat it is played
// here by a view without its file). The opener stays a holder, is asked for again, and a fork
// it makes then names the child, as it does once a scan has seen it hold.
TEST_F(HolderTrackerForkTest, AnOpenerTheScanSawBeforeItsFdIsReadAgainAndItsForksFollowed) {
  auto t = tracker_;
  int go[2], back[2];
  ASSERT_EQ(::pipe(go), 0);
  ASSERT_EQ(::pipe(back), 0);
  pid_t worker = 0;
  pid_t trainer = ::fork();
  if (trainer == 0) {
    int fd = ::open(file_.c_str(), O_RDONLY);
    char c;
    if (fd < 0 || ::read(go[0], &c, 1) != 1) ::_exit(1);
    pid_t worker = ::fork();
    if (worker == 0)
      for (;;) ::pause();
    if (::write(back[1], &worker, sizeof worker) != sizeof worker) ::_exit(1);
    for (;;) ::pause();
  }
  Reaped reaped{{&trainer, &worker}};
  // take() hands each request out once: what it asked for is kept across the polls.
  ASSERT_TRUE(asked_for(*t, trainer));
  core::ProcView before_fd;
  before_fd.processes = {process(trainer, 1, false)};
  t->scanned(before_fd, false);
  EXPECT_TRUE(asked_for(*t, trainer)) << "an open no scan confirmed is not read again";
  ASSERT_EQ(::write(go[1], "x", 1), 1);
  ASSERT_TRUE(read_within(back[0], &worker, sizeof worker));
  EXPECT_TRUE(asked_for(*t, worker)) << "the fork of an unconfirmed opener was not followed";
  // A scan that sees it hold confirms the open: it is read again only as any holder is.
  core::ProcView held;
  held.processes = {process(trainer, 1, true), process(worker, 2, true)};
  t->scanned(held, false);
  auto r = t->take();
  EXPECT_EQ(std::find(r.pids.begin(), r.pids.end(), trainer), r.pids.end());
  for (int fd : {go[0], go[1], back[0], back[1]}) ::close(fd);
}

// An open whose final close by the same process is read holds nothing to wait for: a scan
// that finds it holding nothing is believed.
TEST_F(HolderTrackerForkTest, AnOpenClosedAgainIsNotReadAgain) {
  auto t = tracker_;
  pid_t prober = ::fork();
  if (prober == 0) {
    ::close(::open(file_.c_str(), O_RDONLY));
    for (;;) ::pause();
  }
  Reaped reaped{{&prober}};
  ASSERT_TRUE(soon([&] { return t->counters().closes >= 1; }));
  (void)t->take();
  core::ProcView closed;
  closed.processes = {process(prober, 1, false)};
  t->scanned(closed, false);
  auto r = t->take();
  EXPECT_EQ(std::find(r.pids.begin(), r.pids.end(), prober), r.pids.end());
}

// A fork storm elsewhere (a PID-cycling job) pushes the record of a trainer's fork out before
// the trainer's open is read: the worker is then found by a full scan instead of never.
TEST_F(HolderTrackerForkTest, AForkRecordPushedOutByAStormStillLeadsToTheChild) {
  auto t = tracker_;
  // The trainer, its worker and the pipes, ended however the test ends.
  struct Scene {
    int go[2] = {-1, -1}, back[2] = {-1, -1};
    pid_t trainer = -1, worker = -1;
    ~Scene() {
      if (worker > 0) ::kill(worker, SIGKILL);
      if (trainer > 0) {
        ::kill(trainer, SIGKILL);
        ::waitpid(trainer, nullptr, 0);
      }
      for (int fd : {go[0], go[1], back[0], back[1]})
        if (fd >= 0) ::close(fd);
    }
  } sc;
  ASSERT_EQ(::pipe(sc.go), 0);
  ASSERT_EQ(::pipe(sc.back), 0);
  sc.trainer = ::fork();
  if (sc.trainer == 0) {
    // The worker shares the trainer's fd table (CLONE_FILES), so it holds what the trainer
    // opens after the fork: the storm fits between the fork and the open.
    long worker = ::syscall(SYS_clone, CLONE_FILES | SIGCHLD, nullptr, nullptr, nullptr, nullptr);
    if (worker == 0)
      for (;;) ::pause();
    pid_t w = static_cast<pid_t>(worker);
    char c;
    if (::write(sc.back[1], &w, sizeof w) != sizeof w || ::read(sc.go[0], &c, 1) != 1) ::_exit(1);
    if (::open(file_.c_str(), O_RDONLY) < 0) ::_exit(1);
    for (;;) ::pause();
  }
  ASSERT_TRUE(read_within(sc.back[0], &sc.worker, sizeof sc.worker));
  // More forks than the tracker keeps, inside its window (vfork: no copy to make).
  const auto storm = std::chrono::steady_clock::now();
  for (size_t i = 0; i < HolderBook::kKeptRecentForks + 256; ++i) {
    pid_t p = ::vfork();
    if (p == 0) ::_exit(0);
    ::waitpid(p, nullptr, 0);
  }
  const auto took = std::chrono::steady_clock::now() - storm;
  // A record older than the window is let go by design; a machine this slow (a loaded
  // sanitizer build) cannot stage a storm inside it.
  if (took > HolderBook::kRecentForkWindow / 2)
    GTEST_SKIP() << "the storm took "
                 << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                 << " ms, too close to the tracker's window";
  ASSERT_EQ(::write(sc.go[1], "x", 1), 1);
  bool full = false, named = false;
  EXPECT_TRUE(soon([&] {
    auto r = t->take();
    full = full || r.full;
    named = named || std::find(r.pids.begin(), r.pids.end(), sc.worker) != r.pids.end();
    return full || named;
  })) << "the worker "
      << sc.worker << " was never asked for, nor a full scan";
}

TEST_F(HolderTrackerTest, WithoutPrivilegeItDoesNotStartAndSaysWhy) {
  int pipefd[2];
  ASSERT_EQ(::pipe(pipefd), 0);
  // Opened before the privilege goes, as the daemon does: some hosts' /proc is not open to
  // nobody, and what is checked here is the kernel's events, not /proc.
  auto proc_root = proc();
  pid_t child = ::fork();
  if (child == 0) {
    ::close(pipefd[0]);
    if (::geteuid() == 0 && ::setresuid(65534, 65534, 65534) != 0) ::_exit(2);
    auto t = HolderTracker::start({file_}, proc_root, [] {});
    std::string why = t ? "started" : t.error().text();
    if (::write(pipefd[1], why.data(), why.size()) < 0) ::_exit(3);
    ::_exit(t ? 1 : 0);
  }
  ::close(pipefd[1]);
  char buf[512] = {};
  ssize_t n = ::read(pipefd[0], buf, sizeof buf - 1);
  ::close(pipefd[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << std::string(buf, n > 0 ? n : 0);
  EXPECT_NE(std::string(buf).find("CAP_SYS_ADMIN"), std::string::npos) << buf;
}

// An open/close storm on a GPU file (mode 0666: anyone can) wakes the engine at most a burst and
// once per kMinWakeGap, its events are read at most once per kFileReadGap (the kernel merges the
// rest), and the last events are still taken: a holder opened during the storm is asked for within
// the gap.
// The opens a storm makes before the wakes and reads it caused are counted: about a second's
// worth on an idle machine.
constexpr long kStormOpens = 20000;

TEST_F(HolderTrackerTest, AStormOfOpensWakesTheEngineAtMostOncePerGap) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root";
  auto t = start();
  ASSERT_NE(t, nullptr);
  int stop[2];
  ASSERT_EQ(::pipe(stop), 0);
  // The storm's own count of its opens, shared with this process.
  auto* performed = static_cast<std::atomic<long>*>(::mmap(nullptr, sizeof(std::atomic<long>),
                                                           PROT_READ | PROT_WRITE,
                                                           MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(performed, MAP_FAILED);
  new (performed) std::atomic<long>(0);
  pid_t storm = ::fork();
  if (storm == 0) {
    ::close(stop[1]);
    ::fcntl(stop[0], F_SETFL, O_NONBLOCK);
    char c;
    while (::read(stop[0], &c, 1) < 0) {
      for (int i = 0; i < 100; ++i) ::close(::open(file_.c_str(), O_RDONLY));
      performed->fetch_add(100);
    }
    ::_exit(0);
  }
  ::close(stop[0]);
  ASSERT_TRUE(soon([&] { return t->counters().opens > 5; }));
  const auto began = std::chrono::steady_clock::now();
  const int wakes_before = wakes_.load();
  const uint64_t read_before = t->counters().opens;
  const long performed_before = performed->load();
  // A storm of kStormOpens opens to count over, and on until the engine was woken and events
  // were read: a loaded machine takes longer for them, and the bounds below are over the whole
  // time taken.
  soon([&] {
    return performed->load() - performed_before >= kStormOpens && wakes_.load() > wakes_before &&
           t->counters().opens > read_before;
  });
  const int wakes = wakes_.load() - wakes_before;
  const uint64_t read_during = t->counters().opens - read_before;
  const long performed_during = performed->load() - performed_before;
  const auto elapsed = std::chrono::steady_clock::now() - began;
  // A holder opened during the storm is asked for.
  pid_t late = ::fork();
  if (late == 0) {
    int fd = ::open(file_.c_str(), O_RDONLY);
    ::pause();
    ::_exit(fd >= 0 ? 0 : 1);
  }
  // By name, or by a full scan when the kernel's queue overflowed and lost events.
  bool asked = false;
  soon([&] {
    auto r = t->take();
    asked = asked || r.full || std::find(r.pids.begin(), r.pids.end(), late) != r.pids.end();
    return asked;
  });
  ASSERT_EQ(::write(stop[1], "x", 1), 1);
  ::close(stop[1]);
  int status = 0;
  ::waitpid(storm, &status, 0);
  ::kill(late, SIGKILL);
  ::waitpid(late, &status, 0);
  EXPECT_TRUE(asked) << t->counters().opens << " opens, " << t->counters().overflows
                     << " overflows";
  EXPECT_GT(performed_during, 1000) << "not much of a storm";
  ::munmap(performed, sizeof(std::atomic<long>));
  // Merged records, not one per open: the kernel merges a process's queued events on one file
  // while the reader waits its gap (how many records a gap leaves depends on how the opens and
  // closes interleave, and a slower, instrumented reader sees more; a tenth of the opens is far
  // above either).
  const auto reads = elapsed / WakePacer::kFileReadGap;
  EXPECT_GE(read_during, 1u);
  EXPECT_LE(read_during, static_cast<uint64_t>(performed_during) / 10)
      << "over " << reads << " read gaps, with " << performed_during << " opens made";
  const auto gaps = elapsed / WakePacer::kMinWakeGap;
  EXPECT_GE(wakes, 1);
  EXPECT_LE(wakes, gaps + static_cast<int64_t>(WakePacer::kWakeBurst) + 1)
      << "over " << gaps << " gaps";
}

// With file handles the kernel opens nothing in the listener: events still come when this
// process cannot take one more file descriptor (with file descriptors they could not).
TEST_F(HolderTrackerTest, FileHandleEventsOpenNothingInTheListener) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root";
  auto w = track::FanotifyWatch::open({file_});
  ASSERT_TRUE(w) << w.error().text();
  if (w->source() != track::FanotifyWatch::Source::FileHandles)
    GTEST_SKIP() << "no file handles here: " << w->fallback_reason();
  EXPECT_TRUE(w->fallback_reason().empty());
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &old), 0);
  pid_t child = ::fork();
  if (child == 0) {
    char c;
    if (::read(go[0], &c, 1) != 1) ::_exit(1);
    ::setrlimit(RLIMIT_NOFILE, &old);
    ::_exit(::open(file_.c_str(), O_RDONLY) >= 0 ? 0 : 1);
  }
  // No fd is free for this process from here on.
  int lowest = ::dup(0);
  ASSERT_GE(lowest, 0);
  ::close(lowest);
  rlimit none = old;
  none.rlim_cur = static_cast<rlim_t>(lowest);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &none), 0);
  ASSERT_EQ(::write(go[1], "x", 1), 1);
  int status = 0;
  ::waitpid(child, &status, 0);
  std::vector<track::FileEvent> events;
  bool overflow = false;
  soon([&] {
    auto batch = w->read();
    overflow = overflow || batch.overflow;
    events.insert(events.end(), batch.events.begin(), batch.events.end());
    return !events.empty();
  });
  ::setrlimit(RLIMIT_NOFILE, &old);
  ::close(go[0]);
  ::close(go[1]);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_FALSE(overflow);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.front().pid, child);
  EXPECT_EQ(events.front().path, file_);
}

}  // namespace
}  // namespace gpureap::daemon

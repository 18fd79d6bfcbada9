// Collector::update_processes: what the daemon does for a holder's event instead of scanning
// every process: the named processes and the holders read again, everything else kept, and
// the process list shared with the previous view where nothing changed.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "collect/collector.h"

namespace gpureap::collect {
namespace {

class CollectUpdate : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpureap-update-XXXXXX";
    dev_ = ::mkdtemp(tmpl);
    std::ofstream(dev_ + "/nvidia0") << "stand-in\n";  // matched by device and inode
    auto c = Collector::open({"/proc", dev_}, nullptr);
    ASSERT_TRUE(c.ok());
    collector_.emplace(std::move(*c));
  }
  void TearDown() override {
    for (pid_t k : kids_) {
      ::kill(k, SIGKILL);
      ::waitpid(k, nullptr, 0);
    }
    std::filesystem::remove_all(dev_);
  }

  // A child that opens the stand-in when told (`go`), says so, and pauses.
  pid_t spawn(int& go) {
    int to[2], from[2];
    if (::pipe(to) != 0 || ::pipe(from) != 0) throw std::runtime_error("pipe");
    pid_t pid = ::fork();
    if (pid == 0) {
      char c;
      if (::read(to[0], &c, 1) != 1) ::_exit(97);
      int fd = ::open((dev_ + "/nvidia0").c_str(), O_RDONLY);
      if (fd < 0 || ::write(from[1], "x", 1) != 1) ::_exit(98);
      for (;;) ::pause();
    }
    ::close(to[0]);
    ::close(from[1]);
    kids_.push_back(pid);
    go = to[1];
    answers_.push_back(from[0]);
    return pid;
  }
  void open_now(int go) {
    ASSERT_EQ(::write(go, "x", 1), 1);
    char c;
    ASSERT_EQ(::read(answers_.back(), &c, 1), 1);
  }
  // Until the child sleeps in pause(): between its answer and the pause it still runs, and a
  // stat read then differs from one read after.
  static void wait_paused(pid_t pid) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::minutes(1);
    while (std::chrono::steady_clock::now() < until) {
      std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
      std::string text((std::istreambuf_iterator<char>(in)), {});
      auto close = text.rfind(')');
      if (close != std::string::npos && close + 2 < text.size() && text[close + 2] == 'S') return;
      ::usleep(1000);
    }
    FAIL() << "process " << pid << " never went to sleep";
  }

  std::string dev_;
  std::optional<Collector> collector_;
  std::vector<pid_t> kids_;
  std::vector<int> answers_;
};

TEST_F(CollectUpdate, AProcessAnEventNamesIsReadAgainWithoutAScan) {
  int go = -1;
  pid_t child = spawn(go);
  auto before = collector_->scan_processes();
  ASSERT_NE(before.find(child), nullptr);
  EXPECT_FALSE(before.find(child)->holds_device());
  open_now(go);

  auto after = collector_->update_processes(before, {child});
  ASSERT_NE(after.find(child), nullptr);
  EXPECT_TRUE(after.find(child)->holds_device());
  EXPECT_TRUE(after.find(child)->details) << "a holder's details are read";
  EXPECT_FALSE(before.find(child)->holds_device()) << "the view before is as it was";
  EXPECT_FALSE(after.processes.shares_with(before.processes));
  EXPECT_EQ(after.processes.size(), before.processes.size());
  EXPECT_NE(after.find(::getpid()), nullptr);  // the others are kept
}

TEST_F(CollectUpdate, WhereNothingChangedTheListIsShared) {
  int go = -1;
  pid_t holder = spawn(go);
  open_now(go);
  wait_paused(holder);
  auto view = collector_->scan_processes();
  ASSERT_TRUE(view.find(holder) && view.find(holder)->holds_device());
  // The holder is read again (it pauses: the same stat, the same fds), nothing differs.
  auto same = collector_->update_processes(view, {});
  EXPECT_TRUE(same.processes.shares_with(view.processes));
  auto named = collector_->update_processes(view, {holder});
  EXPECT_TRUE(named.processes.shares_with(view.processes));
}

// A storm's opener between two opens: it held nothing and holds nothing, only its figures
// moved, and no row shows them.
TEST_F(CollectUpdate, ANamedProcessThatStillHoldsNothingKeepsTheListShared) {
  auto view = collector_->scan_processes();
  ASSERT_NE(view.find(::getpid()), nullptr);
  volatile unsigned long spin = 0;  // some CPU time, so this process's stat moves
  for (unsigned long i = 0; i < 50'000'000UL; ++i) spin = spin + i;
  auto after = collector_->update_processes(view, {::getpid()});
  EXPECT_TRUE(after.processes.shares_with(view.processes));
}

// A holder whose session leader exited long ago (a shell that started a job and left): the
// leader is looked for, found gone, and nothing changes.
TEST_F(CollectUpdate, ALeaderThatIsGoneChangesNothing) {
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t leader = ::fork();
  if (leader == 0) {
    ::setsid();
    pid_t child = ::fork();
    if (child == 0) {
      int fd = ::open((dev_ + "/nvidia0").c_str(), O_RDONLY);
      pid_t me = ::getpid();
      if (fd < 0 || ::write(ready[1], &me, sizeof me) != sizeof me) ::_exit(98);
      for (;;) ::pause();
    }
    ::_exit(0);  // the session's leader leaves; its child is reparented
  }
  ::waitpid(leader, nullptr, 0);
  pid_t holder = 0;
  ASSERT_EQ(::read(ready[0], &holder, sizeof holder), static_cast<ssize_t>(sizeof holder));
  kids_.push_back(holder);  // killed at the end (not a child: waitpid fails, harmlessly)
  wait_paused(holder);
  auto view = collector_->scan_processes();
  ASSERT_NE(view.find(holder), nullptr);
  ASSERT_EQ(view.find(holder)->stat.sid, leader);
  ASSERT_EQ(view.find(leader), nullptr);
  auto after = collector_->update_processes(view, {holder});
  EXPECT_TRUE(after.processes.shares_with(view.processes));
}

// A process that holds nothing, read again once it died: a zombie in the view, not the live
// process it was (a distributed job's rank closes its GPU files in do_exit() before it is a
// zombie, so the view may last have read it so).
TEST_F(CollectUpdate, AProcessThatHoldsNothingAndDiedIsAZombieInTheView) {
  int go = -1;
  pid_t child = spawn(go);
  wait_paused(child);
  auto view = collector_->scan_processes();
  ASSERT_NE(view.find(child), nullptr);
  ASSERT_FALSE(view.find(child)->holds_device());
  ASSERT_FALSE(view.find(child)->stat.is_zombie());
  ASSERT_EQ(::kill(child, SIGKILL), 0);  // not reaped: a zombie until TearDown
  siginfo_t info{};
  ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOWAIT), 0);
  auto after = collector_->update_processes(view, {child});
  ASSERT_NE(after.find(child), nullptr);
  EXPECT_TRUE(after.find(child)->stat.is_zombie()) << after.find(child)->stat.state;
  EXPECT_FALSE(view.find(child)->stat.is_zombie()) << "the view before is as it was";
}

TEST_F(CollectUpdate, AHolderThatExitedLeavesTheList) {
  int go = -1;
  pid_t holder = spawn(go);
  open_now(go);
  wait_paused(holder);
  auto view = collector_->scan_processes();
  ASSERT_NE(view.find(holder), nullptr);
  ::kill(holder, SIGKILL);
  ::waitpid(holder, nullptr, 0);
  std::erase(kids_, holder);
  auto after = collector_->update_processes(view, {holder});
  EXPECT_EQ(after.find(holder), nullptr);
  EXPECT_EQ(after.processes.size(), view.processes.size() - 1);
}

TEST_F(CollectUpdate, ANewHoldersParentAndLeadersAreReadIn) {
  auto view = collector_->scan_processes();
  // A new process group and session, started after the scan: its leader holds the file
  // through a child it forks.
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t leader = ::fork();
  if (leader == 0) {
    ::setsid();
    pid_t child = ::fork();
    if (child == 0) {
      int fd = ::open((dev_ + "/nvidia0").c_str(), O_RDONLY);
      pid_t me = ::getpid();
      if (fd < 0 || ::write(ready[1], &me, sizeof me) != sizeof me) ::_exit(98);
      for (;;) ::pause();
    }
    for (;;) ::pause();
  }
  kids_.push_back(leader);
  pid_t child = 0;
  ASSERT_EQ(::read(ready[0], &child, sizeof child), static_cast<ssize_t>(sizeof child));
  ASSERT_EQ(view.find(leader), nullptr);
  auto after = collector_->update_processes(view, {child});
  ::kill(child, SIGKILL);
  ASSERT_NE(after.find(child), nullptr);
  EXPECT_TRUE(after.find(child)->holds_device());
  ASSERT_NE(after.find(leader), nullptr) << "its parent, group and session leader";
  EXPECT_EQ(after.find(child)->stat.sid, leader);
  EXPECT_TRUE(after.find(leader)->details) << "a holder's parent's details are read";
}

}  // namespace
}  // namespace gpureap::collect

// ProcFs::read_process_stat where the main thread has begun to exit, on /proc trees laid out as
// the kernel lays them out (the stat lines as a 6.x kernel prints them): a leader that exited
// while a thread runs is the leader's end only, and the process reads as that thread (not
// exiting); a process whose last thread is in do_exit(), or whose leader is in a group exit,
// is ending and reads so. Its fd table, read through a live thread, is read through one that
// runs however the threads end meanwhile.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "backend/registry.h"
#include "procfs/device_files.h"
#include "procfs/fd_scan.h"
#include "procfs/proc_fs.h"

namespace gpureap::procfs {
namespace exited_leader_test {

// PF_EXITING (include/linux/sched.h).
constexpr unsigned kExiting = 0x4;
// The exited leader's flags as the kernel shows them (PF_EXITING with PF_RANDOMIZE and the
// exit's own), and a thread's that runs (PF_RANDOMIZE | PF_FORKNOEXEC).
constexpr unsigned kExitedLeader = 0x40804c;
constexpr unsigned kRunning = 0x400040;

class ExitedLeaderTree : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpureap-exited-leader-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  // The stat of `tid` at `dir` (PID, or PID/task/TID): a task that has let go of its memory
  // (an exited leader, a thread past exit_mm()) shows no size. `utime`: the whole group's in
  // PID/stat, the task's own under task/.
  void stat(const std::string& dir, pid_t tid, char state, unsigned flags, long threads,
            bool has_mm, int utime) {
    std::filesystem::create_directories(root_ + "/" + dir);
    std::ofstream(root_ + "/" + dir + "/stat")
        << tid << " (trainer) " << state << " 8290 8282 3587 0 -1 " << flags << " 36 0 0 0 "
        << utime << " 2 0 0 20 0 " << threads << " 0 40040 " << (has_mm ? "10928128 232" : "0 0")
        << " 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n";
  }
  // A process of two threads: its leader `leader` (in PID and task/PID), and `thread`.
  void process(char leader_state, unsigned leader_flags, char thread_state, unsigned thread_flags,
               bool thread_has_mm) {
    const bool leader_has_mm = leader_state != 'Z';
    stat(std::to_string(kPid), kPid, leader_state, leader_flags, 2, leader_has_mm, 9);
    stat(std::to_string(kPid) + "/task/" + std::to_string(kPid), kPid, leader_state, leader_flags,
         2, leader_has_mm, 1);
    stat(std::to_string(kPid) + "/task/" + std::to_string(kTid), kTid, thread_state, thread_flags,
         2, thread_has_mm, 8);
  }
  StatRead read() {
    auto proc = ProcFs::open(root_);
    EXPECT_TRUE(proc) << proc.error().text();
    auto r = proc->read_process_stat(kPid);
    EXPECT_TRUE(r) << r.error().text();
    EXPECT_TRUE(r && r->has_value());
    return r && *r ? **r : StatRead{};
  }

  static constexpr pid_t kPid = 4200001, kTid = 4200002;
  std::string root_;
};

// pthread_exit() in main: the leader is a zombie with PF_EXITING for as long as its thread runs.
TEST_F(ExitedLeaderTree, ALiveThreadStandsForTheProcessWhichIsNotExiting) {
  process('Z', kExitedLeader, 'S', kRunning, true);
  const StatRead r = read();
  EXPECT_EQ(r.stat.pid, kPid);
  EXPECT_EQ(r.stat.state, 'S');
  EXPECT_EQ(r.stat.flags, kRunning) << "the live thread's flags, not the exited leader's";
  EXPECT_FALSE(r.stat.is_exiting());
  EXPECT_TRUE(r.stat.leader_exited);
  EXPECT_EQ(r.stat.rss_pages, 232);
  EXPECT_EQ(r.stat.num_threads, 2);
  EXPECT_EQ(r.stat.cpu_ticks, 11u);  // the whole group's, from PID/stat
  EXPECT_EQ(r.fd_task, kTid);
}

// Its last thread is in do_exit(): no thread runs, the process is ending: a zombie, exiting.
TEST_F(ExitedLeaderTree, ALastThreadInDoExitLeavesAnExitingZombie) {
  process('Z', kExitedLeader, 'R', kRunning | kExiting, false);
  const StatRead r = read();
  EXPECT_EQ(r.stat.state, 'Z');
  EXPECT_TRUE(r.stat.is_exiting());
  EXPECT_FALSE(r.stat.leader_exited) << "no thread stands for it";
  EXPECT_EQ(r.fd_task, 0);
}

// A group exit (exit_group(), a fatal signal): the leader is in do_exit() while the other
// thread has not begun its own. The process is ending, and reads so.
TEST_F(ExitedLeaderTree, ALeaderInAGroupExitReadsExiting) {
  process('R', kRunning | kExiting, 'S', kRunning, true);
  const StatRead r = read();
  EXPECT_EQ(r.stat.state, 'R');
  EXPECT_TRUE(r.stat.is_exiting());
  EXPECT_FALSE(r.stat.leader_exited);
  EXPECT_EQ(r.fd_task, 0);
}

// The main thread has exited, and the table was to be read through the thread the stat was read
// through, which has begun its own exit since: past exit_files() the kernel lists its fd folder
// empty, with no error. That is not the process's table, which its other thread still shares and
// holds a GPU file in: it is read through the thread that runs.
TEST_F(ExitedLeaderTree, ATableListedThroughAThreadThatBeganToExitIsReadThroughOneThatRuns) {
  constexpr pid_t kOther = kTid + 1;
  process('Z', kExitedLeader, 'R', kRunning | kExiting, false);
  const std::string task = root_ + "/" + std::to_string(kPid) + "/task/";
  stat(std::to_string(kPid) + "/task/" + std::to_string(kOther), kOther, 'S', kRunning, 2, true, 3);
  std::filesystem::create_directories(root_ + "/dev");
  std::ofstream(root_ + "/dev/nvidia0") << "stand-in\n";
  std::filesystem::create_directories(task + std::to_string(kTid) + "/fd");  // let go of
  std::filesystem::create_directories(task + std::to_string(kOther) + "/fd");
  std::filesystem::create_symlink(root_ + "/dev/nvidia0", task + std::to_string(kOther) + "/fd/3");
  auto catalog = DeviceCatalog::enumerate(backend::device_nodes(backend::builtin_backends()),
                                          root_ + "/dev", root_);
  ASSERT_TRUE(catalog) << catalog.error().text();
  const int proc = ::open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(proc, 0);
  const FdScan scan = scan_device_fds(proc, kPid, *catalog, {}, kTid);
  ::close(proc);
  EXPECT_FALSE(scan.vanished);
  EXPECT_EQ(scan.task, kOther);
  ASSERT_EQ(scan.holds.size(), 1u);
  EXPECT_EQ(scan.holds[0].path, root_ + "/dev/nvidia0");
  EXPECT_EQ(scan.holds[0].fds, std::vector<int>{3});
}

}  // namespace exited_leader_test
}  // namespace gpureap::procfs

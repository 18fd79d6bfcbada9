// Whether a process the proc connector reported ending has ended, on /proc trees laid out as the
// kernel lays them out: the leader's stat, and its threads' under task/.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "daemon/process_exit.h"

namespace gpureap::daemon {
namespace {

constexpr unsigned kExiting = 0x4;      // PF_EXITING
constexpr unsigned kForkNoExec = 0x40;  // PF_FORKNOEXEC: the old leader of a non-leader exec
constexpr uint64_t kStart = 99;

class ProcessExitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpureap-process-exit-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  // PID's stat (its leader's), as the kernel prints it; its leader's under task/ too.
  void leader(pid_t pid, char state, unsigned flags, long threads, uint64_t start = kStart) {
    write(std::to_string(pid), pid, state, flags, threads, start);
    write(std::to_string(pid) + "/task/" + std::to_string(pid), pid, state, flags, threads, start);
  }
  void write(const std::string& dir, pid_t pid, char state, unsigned flags, long threads,
             uint64_t start) {
    std::filesystem::create_directories(root_ + "/" + dir);
    std::ofstream(root_ + "/" + dir + "/stat")
        << pid << " (holder) " << state << " 1 " << pid << " " << pid << " 0 -1 " << flags
        << " 0 0 0 0 0 0 0 0 20 0 " << threads << " 0 " << start << " 0 0\n";
  }
  ProcessExit check(pid_t pid) {
    auto proc = procfs::ProcFs::open(root_);
    EXPECT_TRUE(proc) << proc.error().text();
    return check_exit(*proc, pid, kStart);
  }

  std::string root_;
};

// A read that straddles a non-leader exec's handover of the PID reads the old leader as the
// kernel releases it: a zombie that counts no thread. The process runs on: no end is read there.
TEST_F(ProcessExitTest, AZombieThatCountsNoThreadIsNoEnd) {
  leader(4200001, 'Z', kExiting | kForkNoExec, 0);
  EXPECT_EQ(check(4200001), ProcessExit::ThreadsRun);
}

TEST_F(ProcessExitTest, AZombieThatCountsItselfAloneHasEnded) {
  leader(4200001, 'Z', kExiting, 1);
  EXPECT_EQ(check(4200001), ProcessExit::Ended);
}

TEST_F(ProcessExitTest, AZombieLeaderWithALiveThreadRunsOn) {
  leader(4200001, 'Z', kExiting, 2);
  write("4200001/task/4200002", 4200002, 'S', 0, 2, kStart + 5);
  EXPECT_EQ(check(4200001), ProcessExit::ThreadsRun);
}

// After the handover the PID names the exec'ing thread, with the old leader's start time.
TEST_F(ProcessExitTest, TheThreadThatTookThePidIsTheLeaderRunning) {
  leader(4200001, 'R', 0, 1);
  EXPECT_EQ(check(4200001), ProcessExit::LeaderRuns);
}

TEST_F(ProcessExitTest, GoneHasEnded) {
  EXPECT_EQ(check(4200001), ProcessExit::Ended);
}

// With no start time known, the exit's time tells: a process that started in a later tick is
// another, and one that started by then may be the one that exited.
TEST_F(ProcessExitTest, AProcessStartedAfterTheExitHasReplacedIt) {
  auto proc = procfs::ProcFs::open(root_);
  ASSERT_TRUE(proc) << proc.error().text();
  leader(4200001, 'R', 0, 1, kStart + 1000);
  EXPECT_EQ(check_exit(*proc, 4200001, std::nullopt, kStart + 999), ProcessExit::Replaced);
  EXPECT_EQ(check_exit(*proc, 4200001, std::nullopt, kStart + 1000), ProcessExit::LeaderRuns);
  EXPECT_EQ(check_exit(*proc, 4200001, kStart + 1000, kStart + 1000), ProcessExit::LeaderRuns);
}

// Another start time under the PID: the process ended, and /proc does not say when.
TEST_F(ProcessExitTest, AnotherProcessUnderThePidHasReplacedIt) {
  leader(4200001, 'R', 0, 1, kStart + 1000);
  EXPECT_EQ(check(4200001), ProcessExit::Replaced);
  leader(4200001, 'Z', kExiting, 1, kStart + 1000);
  EXPECT_EQ(check(4200001), ProcessExit::Replaced);
}

}  // namespace
}  // namespace gpureap::daemon

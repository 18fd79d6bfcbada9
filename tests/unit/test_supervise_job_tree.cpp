#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>

#include "no_free_fd.h"
#include "procfs/proc_fs.h"
#include "skip_sanitized.h"
#include "supervise/job_tree.h"
#include "supervise/teardown.h"

namespace gpureap::supervise {
namespace {

core::ProcessStat st(pid_t pid, pid_t ppid, char state = 'S', uint64_t start = 0) {
  core::ProcessStat s;
  s.pid = pid;
  s.ppid = ppid;
  s.pgid = pid;
  s.state = state;
  s.start_ticks = start ? start : 1000 + static_cast<uint64_t>(pid);
  s.comm = "p" + std::to_string(pid);
  return s;
}

std::vector<pid_t> pids(const std::vector<core::ProcessStat>& v) {
  std::vector<pid_t> out;
  for (const auto& s : v) out.push_back(s.pid);
  return out;
}

// 1 ─ 50 (gpureap) ─ 60 (CMD) ─ 61 ─ 62
//                  └ 70 (a reparented orphan, e.g. a setsid daemon)
// 1 ─ 80 (unrelated) ─ 81
const std::vector<core::ProcessStat> kTree = {st(1, 0),   st(50, 1),  st(60, 50), st(61, 60),
                                              st(62, 61), st(70, 50), st(80, 1),  st(81, 80)};

TEST(SuperviseJobTree, DescendantsFollowTheParentChain) {
  EXPECT_EQ(pids(descendants_of(50, kTree)), (std::vector<pid_t>{60, 61, 62, 70}));
  EXPECT_EQ(pids(descendants_of(61, kTree)), (std::vector<pid_t>{62}));
  EXPECT_EQ(pids(descendants_of(62, kTree)), std::vector<pid_t>{});
}

TEST(SuperviseJobTree, ParentLoopsFromTornReadsEndTheWalk) {
  auto tree = kTree;
  tree.push_back(st(90, 91));
  tree.push_back(st(91, 90));
  EXPECT_EQ(pids(descendants_of(50, tree)), (std::vector<pid_t>{60, 61, 62, 70}));
}

TEST(SuperviseJobTree, AParentReadWithAReusedNumberMakesNoDescendant) {
  // /proc is read one process at a time: 80 was read while its parent was 63, an unrelated
  // process that ended; by the time 63 was read its number was the job's (61's new child), which
  // started after 80. 80 is no descendant of the job, nor is its child 81.
  auto tree = kTree;
  tree.push_back(st(63, 61, 'S', 5000));
  tree.push_back(st(85, 63, 'S', 4000));
  tree.push_back(st(86, 85, 'S', 4001));
  tree.push_back(st(64, 63, 'S', 5001));  // the job's new process's own child
  EXPECT_EQ(pids(descendants_of(50, tree)), (std::vector<pid_t>{60, 61, 62, 70, 63, 64}));
  JobMembers members(50);
  EXPECT_EQ(pids(members.observe(tree)), (std::vector<pid_t>{60, 61, 62, 70, 63, 64}));
  EXPECT_FALSE(members.contains(85, std::nullopt));
  EXPECT_FALSE(members.contains(86, std::nullopt));
}

TEST(SuperviseJobTree, MembersAreRememberedAndRecycledPidsAreNotMembers) {
  JobMembers members(50);
  auto live = members.observe(kTree);
  EXPECT_EQ(pids(live), (std::vector<pid_t>{60, 61, 62, 70}));
  // 61 dies; its child 62 escapes to init (no subreaper): still a member by its start time.
  std::vector<core::ProcessStat> later = {st(1, 0), st(50, 1), st(60, 50), st(62, 1),
                                          st(70, 50, 'Z')};
  EXPECT_EQ(pids(members.observe(later)), (std::vector<pid_t>{60, 62}));
  // 61's PID is reused by a stranger: not a member.
  later.push_back(st(61, 1, 'S', 999999));
  EXPECT_EQ(pids(members.observe(later)), (std::vector<pid_t>{60, 62}));
  EXPECT_TRUE(members.contains(61, std::nullopt)) << "gone from /proc: the PID alone decides";
  EXPECT_TRUE(members.contains(61, 1061));
  EXPECT_FALSE(members.contains(61, 999999));
  EXPECT_FALSE(members.contains(80, std::nullopt));
}

TEST(SuperviseJobTree, ZombiesAreNotAlive) {
  EXPECT_TRUE(is_alive(st(5, 1, 'S')));
  EXPECT_TRUE(is_alive(st(5, 1, 'T')));
  EXPECT_TRUE(is_alive(st(5, 1, 'D')));
  EXPECT_FALSE(is_alive(st(5, 1, 'Z')));
  EXPECT_FALSE(is_alive(st(5, 1, 'X')));
}

// A child of this test and its grandchild, both paused, killed when it goes out of scope.
struct ChildAndGrandchild {
  pid_t child = 0, grandchild = 0;
  ChildAndGrandchild() {
    int fds[2];
    if (::pipe(fds) != 0) return;
    child = ::fork();
    if (child == 0) {
      pid_t g = ::fork();
      if (g == 0) {
        for (;;) ::pause();
      }
      if (::write(fds[1], &g, sizeof g) < 0) ::_exit(1);
      for (;;) ::pause();
    }
    ::close(fds[1]);
    if (child > 0 && ::read(fds[0], &grandchild, sizeof grandchild) != sizeof grandchild)
      grandchild = 0;
    ::close(fds[0]);
  }
  ~ChildAndGrandchild() { end(); }
  void end() {
    if (grandchild > 0) ::kill(grandchild, SIGKILL);
    if (child > 0) {
      ::kill(child, SIGKILL);
      ::waitpid(child, nullptr, 0);
    }
    child = grandchild = 0;
  }
};

// Against the live /proc: a real child and grandchild of this test are its descendants.
TEST(SuperviseJobTree, RealProcessesInLiveProc) {
  ChildAndGrandchild job;
  ASSERT_GT(job.grandchild, 0);
  const pid_t child = job.child, grandchild = job.grandchild;
  auto proc = procfs::ProcFs::open("/proc");
  ASSERT_TRUE(proc.ok());
  JobMembers members(::getpid());
  auto all = read_all_stats(*proc);
  ASSERT_TRUE(all.ok()) << all.error().text();
  auto live = pids(members.observe(*all));
  job.end();
  EXPECT_NE(std::find(live.begin(), live.end(), child), live.end());
  EXPECT_NE(std::find(live.begin(), live.end(), grandchild), live.end());
  EXPECT_EQ(std::find(live.begin(), live.end(), ::getpid()), live.end());
}

// A real job (a child of this test and its grandchild) read by a teardown that has no file
// descriptor free: the read is an error that says why and what to do, never an empty job that
// would read as every process gone.
TEST(SuperviseJobTree, AStarvedReadOfTheJobIsAnErrorNotAnEmptyJob) {
  SKIP_UNDER_SANITIZERS();
  ChildAndGrandchild job;
  ASSERT_GT(job.grandchild, 0);
  const pid_t child = job.child, grandchild = job.grandchild;
  const pid_t root = ::getpid();
  auto opened = procfs::ProcFs::open("/proc");
  ASSERT_TRUE(opened.ok());
  JobMembers members(root);
  Teardown teardown(*opened, members, child);
  auto scan = [&] {
    auto live = teardown.scan();
    if (!live) return "error " + std::to_string(live.error().code) + ": " + live.error().text();
    std::string out = "live ";
    for (const auto& s : *live) out += std::to_string(s.pid) + " ";
    return out;
  };
  // With descriptors to spare, the read finds the job; with none, it must say it failed.
  const std::string fed = scan();
  const std::string starved = gpureap::testing::with_no_free_fd([] {}, scan);
  job.end();
  EXPECT_NE(fed.find(" " + std::to_string(child) + " "), std::string::npos) << fed;
  EXPECT_NE(fed.find(" " + std::to_string(grandchild) + " "), std::string::npos) << fed;
  EXPECT_EQ(starved.rfind("error " + std::to_string(EMFILE) + ": ", 0), 0u) << starved;
  EXPECT_NE(starved.find("Too many open files"), std::string::npos) << starved;
  EXPECT_NE(starved.find("ulimit -n"), std::string::npos) << starved;
}

namespace member_thread {

pid_t* g_tid = nullptr;  // in the child: shared with the test, the parked thread's id

void* park(void*) {
  __atomic_store_n(g_tid, static_cast<pid_t>(::syscall(SYS_gettid)), __ATOMIC_SEQ_CST);
  for (;;) ::pause();
}

std::string pending(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string out;
  for (std::string line; std::getline(f, line);)
    if (line.rfind("SigPnd:", 0) == 0 || line.rfind("ShdPnd:", 0) == 0) out += line + "\n";
  return out;
}

}  // namespace member_thread

// A member's number that names a thread now (read from /proc/TID/stat, which answers for a
// thread, with the thread's own start time): kill() by it would reach the thread's whole
// process, which is no member. The kernel opens no pidfd for a thread, so only a check of the
// number's thread group keeps the signal from going out.
TEST(SuperviseJobTree, AMembersNumberThatNamesAThreadIsNeverSignalled) {
  void* shared =
      ::mmap(nullptr, sizeof(pid_t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(shared, MAP_FAILED);
  auto* tid = static_cast<pid_t*>(shared);
  *tid = 0;
  pid_t child = ::fork();
  if (child == 0) {
    sigset_t all;
    sigfillset(&all);
    ::sigprocmask(SIG_BLOCK, &all, nullptr);  // a signal sent stays pending, for the test to see
    member_thread::g_tid = tid;
    pthread_t t;
    if (::pthread_create(&t, nullptr, member_thread::park, nullptr) != 0) ::_exit(1);
    for (;;) ::pause();
  }
  ASSERT_GT(child, 0);
  for (int i = 0; i < 60000 && __atomic_load_n(tid, __ATOMIC_SEQ_CST) == 0; ++i) ::usleep(1000);
  const pid_t thread = __atomic_load_n(tid, __ATOMIC_SEQ_CST);
  auto proc = procfs::ProcFs::open("/proc");
  ASSERT_TRUE(proc);
  auto read = thread > 0 ? proc->read_stat(thread) : proc->read_stat(-1);
  bool sent = true;
  if (read.ok() && *read) sent = signal_member(*proc, **read, SIGTERM);
  const std::string pending = member_thread::pending(child);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  ::munmap(shared, sizeof(pid_t));
  ASSERT_GT(thread, 0) << "the child's thread did not start";
  ASSERT_TRUE(read.ok() && *read) << "its thread's stat could not be read";
  EXPECT_FALSE(sent);
  EXPECT_EQ(pending, "SigPnd:\t0000000000000000\nShdPnd:\t0000000000000000\n")
      << "the thread's process was signalled";
}

}  // namespace
}  // namespace gpureap::supervise

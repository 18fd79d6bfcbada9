// The executor against real child processes: what it signals, and what it refuses to.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <string>

#include "procfs/proc_fs.h"
#include "reap/executor.h"
#include "reap/safety.h"

namespace gpureap::reap {
namespace {

using std::chrono::milliseconds;

// A child running `body`, then pausing until killed; reaped at the end of the test.
class Kid {
 public:
  explicit Kid(const std::function<void()>& body = [] {}) {
    int p[2];
    if (::pipe(p) != 0) throw std::runtime_error("pipe");
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(p[0]);
      body();
      if (::write(p[1], "x", 1) != 1) ::_exit(97);
      for (;;) ::pause();
    }
    ::close(p[1]);
    char c;
    if (::read(p[0], &c, 1) != 1) ADD_FAILURE() << "child did not start";
    ::close(p[0]);
  }
  ~Kid() { reap(SIGKILL); }
  pid_t pid() const { return pid_; }
  // Exit status as the shell reports it, after killing it with `sig` if it still runs.
  int reap(int sig) {
    if (pid_ <= 0) return -1;
    ::kill(pid_, sig);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return status;
  }

 private:
  pid_t pid_ = -1;
};

const procfs::ProcFs& proc_fs() {
  static auto p = procfs::ProcFs::open("/proc");
  return *p;
}

std::string status_field(pid_t pid, const std::string& key) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(f, line);)
    if (line.rfind(key + ":", 0) == 0) return line.substr(key.size() + 1);
  return "";
}

// Nothing pending for a child that blocks every signal: proof that none was sent.
bool nothing_pending(pid_t pid) {
  return std::stoull(status_field(pid, "SigPnd"), nullptr, 16) == 0 &&
         std::stoull(status_field(pid, "ShdPnd"), nullptr, 16) == 0;
}

void block_all_signals() {
  sigset_t all;
  sigfillset(&all);
  sigprocmask(SIG_BLOCK, &all, nullptr);
}

char state_of(pid_t pid) {
  auto st = proc_fs().read_stat(pid);
  return st.ok() && *st ? (*st)->state : '\0';
}

Target target_of(pid_t pid, Action action = Action::Signal) {
  auto st = proc_fs().read_stat(pid);
  EXPECT_TRUE(st.ok() && *st);
  Target t;
  t.pid = pid;
  t.start_ticks = (*st)->start_ticks;
  t.comm = (*st)->comm;
  t.state = (*st)->state;
  t.action = action;
  t.reasons.push_back({ReasonKind::Named});
  return t;
}

std::vector<Execution> run(std::vector<Target> targets, ExecOptions o = {}) {
  Plan plan;
  plan.targets = std::move(targets);
  ProcFsProbe probe(proc_fs());
  return Executor(probe, o).run(plan);
}

TEST(ReapExecutor, CooperativeProcessExitsOnSigterm) {
  Kid kid;
  auto e = run({target_of(kid.pid())});
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].status, ExecStatus::Exited);
  EXPECT_TRUE(e[0].pidfd);
  EXPECT_EQ(e[0].signals, std::vector<int>{SIGTERM});
  EXPECT_EQ(e[0].exited_after, SIGTERM);
  EXPECT_TRUE(e[0].exited_at.has_value());
  int status = kid.reap(0);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
}

TEST(ReapExecutor, IgnoredSigtermIsEscalatedToSigkill) {
  Kid kid([] { ::signal(SIGTERM, SIG_IGN); });
  auto e = run({target_of(kid.pid())}, {.grace = milliseconds(200)});
  EXPECT_EQ(e[0].status, ExecStatus::Exited);
  EXPECT_EQ(e[0].signals, (std::vector<int>{SIGTERM, SIGKILL}));
  EXPECT_EQ(e[0].exited_after, SIGKILL);
  int status = kid.reap(0);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

TEST(ReapExecutor, NoEscalateLeavesASurvivor) {
  Kid kid([] { ::signal(SIGTERM, SIG_IGN); });
  auto e = run({target_of(kid.pid())}, {.grace = milliseconds(100), .escalate = false});
  EXPECT_EQ(e[0].status, ExecStatus::Survived);
  EXPECT_EQ(e[0].signals, std::vector<int>{SIGTERM});
  EXPECT_NE(e[0].why.find("--no-escalate"), std::string::npos) << e[0].why;
  EXPECT_EQ(e[0].state, 'S');
  EXPECT_EQ(state_of(kid.pid()), 'S');
}

TEST(ReapExecutor, ACancelledWaitSendsNothingMore) {
  Kid kid([] { ::signal(SIGTERM, SIG_IGN); });
  ExecOptions o;
  o.grace = std::chrono::hours(1);  // only the cancellation can end the wait
  o.cancelled = [] { return true; };
  auto e = run({target_of(kid.pid())}, o);
  EXPECT_EQ(e[0].status, ExecStatus::Survived);
  EXPECT_EQ(e[0].signals, std::vector<int>{SIGTERM});
  EXPECT_NE(e[0].why.find("gpureap stopped"), std::string::npos) << e[0].why;
  char state = state_of(kid.pid());  // alive: it ignores SIGTERM and was sent nothing else
  EXPECT_TRUE(state != '\0' && state != 'Z' && state != 'X') << state;
}

TEST(ReapExecutor, StoppedProcessIsResumedToActOnSigterm) {
  Kid kid;
  ::kill(kid.pid(), SIGSTOP);
  for (int i = 0; i < 60000 && state_of(kid.pid()) != 'T'; ++i) ::usleep(1000);
  ASSERT_EQ(state_of(kid.pid()), 'T');
  // Without SIGCONT the SIGTERM would stay pending and only SIGKILL would end it.
  auto e = run({target_of(kid.pid())}, {.grace = milliseconds(5000), .escalate = false});
  EXPECT_EQ(e[0].status, ExecStatus::Exited);
  EXPECT_EQ(e[0].signals, (std::vector<int>{SIGTERM, SIGCONT}));
  EXPECT_EQ(e[0].exited_after, SIGTERM);
}

TEST(ReapExecutor, StartTimeMismatchIsNeverSignalled) {
  for (bool fallback : {false, true}) {
    Kid kid(block_all_signals);
    Target t = target_of(kid.pid());
    t.start_ticks += 1;  // the plan saw another process under this PID
    auto e = run({t}, {.grace = milliseconds(100), .force_fallback = fallback});
    EXPECT_EQ(e[0].status, ExecStatus::Recycled) << fallback;
    EXPECT_TRUE(e[0].signals.empty());
    EXPECT_NE(e[0].why.find("another process"), std::string::npos);
    EXPECT_TRUE(nothing_pending(kid.pid()));
    EXPECT_NE(state_of(kid.pid()), 'Z');
  }
}

TEST(ReapExecutor, APidReusedWithinTheSameStartTickIsToldByItsName) {
  for (bool fallback : {false, true}) {
    Kid kid(block_all_signals);
    Target t = target_of(kid.pid());
    // The plan saw another program under this PID with the same start tick.
    t.comm = "churn-holder";
    auto e = run({t}, {.grace = milliseconds(100), .force_fallback = fallback});
    EXPECT_EQ(e[0].status, ExecStatus::Recycled) << fallback;
    EXPECT_TRUE(e[0].signals.empty());
    EXPECT_NE(e[0].why.find("the same start tick"), std::string::npos) << e[0].why;
    EXPECT_TRUE(nothing_pending(kid.pid()));
    EXPECT_NE(state_of(kid.pid()), 'Z');
  }
}

namespace thread_target {

pid_t* g_tid = nullptr;  // in the child: shared with the test, the parked thread's id

void* park(void*) {
  __atomic_store_n(g_tid, static_cast<pid_t>(::syscall(SYS_gettid)), __ATOMIC_SEQ_CST);
  for (;;) ::pause();
}

}  // namespace thread_target

// A plan's PID that now names a thread, not a process (read from /proc/TID/stat, which answers
// for a thread: its start time and name are the thread's own): kill() by that number would
// signal the thread's whole process, which nobody planned. Neither path signals it.
TEST(ReapExecutor, AThreadsIdIsNeverSignalledForItsProcess) {
  void* shared =
      ::mmap(nullptr, sizeof(pid_t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(shared, MAP_FAILED);
  auto* tid = static_cast<pid_t*>(shared);
  *tid = 0;
  Kid kid([tid] {
    block_all_signals();  // the thread inherits the mask: a signal sent stays pending
    thread_target::g_tid = tid;
    pthread_t t;
    if (::pthread_create(&t, nullptr, thread_target::park, nullptr) != 0) ::_exit(96);
    while (__atomic_load_n(tid, __ATOMIC_SEQ_CST) == 0) ::sched_yield();
  });
  const pid_t thread = *tid;
  ASSERT_GT(thread, 0);
  ASSERT_NE(thread, kid.pid());
  for (bool fallback : {false, true}) {
    ASSERT_NE(state_of(kid.pid()), 'Z') << "its process was ended; fallback " << fallback;
    Target t = target_of(thread);  // its stat, as /proc/TID/stat gives it
    auto e = run({t}, {.grace = milliseconds(100), .force_fallback = fallback});
    ASSERT_EQ(e.size(), 1u);
    EXPECT_EQ(e[0].status, ExecStatus::Recycled) << fallback;
    EXPECT_TRUE(e[0].signals.empty()) << fallback;
    EXPECT_NE(e[0].why.find("thread of process " + std::to_string(kid.pid())), std::string::npos)
        << e[0].why;
    EXPECT_TRUE(nothing_pending(kid.pid())) << "its process was signalled; fallback " << fallback;
    EXPECT_NE(state_of(kid.pid()), 'Z');
  }
  ::munmap(shared, sizeof(pid_t));
}

TEST(ReapExecutor, FallbackWithoutPidfdSignalsAndWaits) {
  Kid kid;
  auto e = run({target_of(kid.pid())}, {.force_fallback = true});
  EXPECT_EQ(e[0].status, ExecStatus::Exited);
  EXPECT_FALSE(e[0].pidfd);
  EXPECT_EQ(e[0].exited_after, SIGTERM);
}

TEST(ReapExecutor, ProcessGoneBeforeTheSignalIsNotSignalled) {
  Kid kid;
  Target t = target_of(kid.pid());
  kid.reap(SIGKILL);
  auto e = run({t});
  EXPECT_TRUE(e[0].status == ExecStatus::Exited || e[0].status == ExecStatus::Recycled);
  EXPECT_TRUE(e[0].signals.empty());
  EXPECT_FALSE(e[0].exited_after.has_value());
}

TEST(ReapExecutor, ExitedButUnreapedChildCountsAsExited) {
  Kid kid;
  Target t = target_of(kid.pid());
  ::kill(kid.pid(), SIGKILL);
  for (int i = 0; i < 60000 && state_of(kid.pid()) != 'Z'; ++i) ::usleep(1000);
  auto e = run({t});
  EXPECT_EQ(e[0].status, ExecStatus::Exited);
  EXPECT_TRUE(e[0].signals.empty());
}

TEST(ReapExecutor, TargetsThatAreNotToBeSignalledAreUntouched) {
  Kid refused(block_all_signals), zombie_like(block_all_signals), permitted(block_all_signals);
  auto e =
      run({target_of(refused.pid(), Action::Refused), target_of(zombie_like.pid(), Action::Zombie),
           target_of(permitted.pid(), Action::NotPermitted)});
  for (const auto& x : e) EXPECT_EQ(x.status, ExecStatus::NotAttempted);
  for (pid_t pid : {refused.pid(), zombie_like.pid(), permitted.pid()})
    EXPECT_TRUE(nothing_pending(pid));
}

TEST(ReapExecutor, CustomSignal) {
  Kid kid(
      [] { ::signal(SIGINT, SIG_DFL); });  // a shell starting tests in the background ignores it
  auto e = run({target_of(kid.pid())}, {.signal = SIGINT});
  EXPECT_EQ(e[0].exited_after, SIGINT);
  int status = kid.reap(0);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT);
}

// /proc as it is now, except that gpureap's parent has `ancestor` for its parent: what a shell
// started after the plan's snapshot (top fed by the daemon) looks like.
class ProbeWithAncestor final : public ProcessProbe {
 public:
  explicit ProbeWithAncestor(pid_t ancestor) : real_(proc_fs()), ancestor_(ancestor) {}
  core::Result<std::optional<core::ProcessStat>> stat(pid_t pid) const override {
    auto st = real_.stat(pid);
    if (pid == ::getppid() && st.ok() && *st) (*st)->ppid = ancestor_;
    if (pid == ancestor_ && st.ok() && *st) (*st)->ppid = 1;
    return st;
  }
  std::optional<core::ProcessDetails> details(pid_t pid, bool want_wchan) const override {
    return real_.details(pid, want_wchan);
  }
  std::optional<pid_t> thread_group_of(pid_t tid) const override {
    return real_.thread_group_of(tid);
  }

 private:
  ProcFsProbe real_;
  pid_t ancestor_;
};

TEST(ReapExecutor, AnAncestorOfGpureapNowIsNeverSignalledWhateverThePlanSaid) {
  Kid keeper([] { block_all_signals(); });
  ProbeWithAncestor probe(keeper.pid());
  Plan plan;  // planned on a snapshot that did not know gpureap's ancestors: it is a target
  plan.targets.push_back(target_of(keeper.pid()));
  auto e = Executor(probe, {}).run(plan);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].status, ExecStatus::Survived);
  EXPECT_NE(e[0].why.find("ancestor"), std::string::npos) << e[0].why;
  EXPECT_TRUE(e[0].signals.empty());
  EXPECT_TRUE(nothing_pending(keeper.pid()));
  EXPECT_EQ(own_ancestors(probe).at(1), keeper.pid());
}

}  // namespace
}  // namespace gpureap::reap

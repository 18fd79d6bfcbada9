// One reap from plan to report, against real child processes: the go-ahead, the progress
// callbacks in order, and the timing the report carries.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "reap/collector_world.h"
#include "reap/pipeline.h"

namespace gpureap::reap {
namespace {

using namespace std::chrono_literals;

class ReapPipeline : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpureap-pipeline-XXXXXX";
    dev_ = ::mkdtemp(tmpl);
    auto c = collect::Collector::open({"/proc", dev_}, nullptr);
    ASSERT_TRUE(c.ok());
    collector_ = std::make_shared<const collect::Collector>(std::move(*c));
    world_ = std::make_unique<CollectorWorld>(collector_);
  }
  void TearDown() override {
    for (pid_t k : kids_) {
      ::kill(k, SIGKILL);
      ::waitpid(k, nullptr, 0);
    }
    std::filesystem::remove_all(dev_);
  }

  // A child that pauses until killed; `ignore_term`: SIGTERM does not end it.
  pid_t spawn(bool ignore_term) {
    int p[2];
    if (::pipe(p) != 0) throw std::runtime_error("pipe");
    pid_t pid = ::fork();
    if (pid == 0) {
      ::signal(SIGTERM, ignore_term ? SIG_IGN : SIG_DFL);
      if (::write(p[1], "x", 1) != 1) ::_exit(97);
      for (;;) ::pause();
    }
    ::close(p[1]);
    char c;
    if (::read(p[0], &c, 1) != 1) ADD_FAILURE() << "child did not start";
    ::close(p[0]);
    kids_.push_back(pid);
    return pid;
  }

  // The exit status of a child that has exited (or -1 when it still runs).
  int exited(pid_t pid) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) != pid) return -1;
    std::erase(kids_, pid);
    return status;
  }

  static ReapOptions fast() {
    ReapOptions o;
    o.exec.grace = 300ms;
    o.exec.kill_wait = 2s;
    o.verify.wait_release = 2s;
    o.verify.interval = 10ms;
    return o;
  }

  std::string dev_;
  std::vector<pid_t> kids_;
  std::shared_ptr<const collect::Collector> collector_;
  std::unique_ptr<CollectorWorld> world_;
};

TEST_F(ReapPipeline, PlansAsksCarriesOutAndSaysEachStep) {
  pid_t stubborn = spawn(true);
  auto snapshot = collector_->collect();
  std::vector<std::string> steps;
  Progress progress;
  progress.signalling = [&](const Plan& p) {
    steps.push_back("signalling " + std::to_string(p.count(Action::Signal)));
  };
  progress.escalating = [&](size_t n) { steps.push_back("escalating " + std::to_string(n)); };
  progress.awaiting_release = [&](const std::vector<Execution>& e) {
    steps.push_back("awaiting " + std::to_string(e.size()));
  };
  Request request;
  request.pids = {stubborn};
  bool asked = false;
  auto started = std::chrono::system_clock::now();
  auto reaped = Pipeline(*world_, fast(), progress)
                    .run(
                        snapshot, request,
                        [&](Plan& plan) {
                          asked = true;
                          EXPECT_EQ(plan.count(Action::Signal), 1u);
                          EXPECT_TRUE(steps.empty());  // nothing is signalled before the go-ahead
                          return true;
                        },
                        started);
  ASSERT_TRUE(reaped.ok()) << reaped.error().text();
  EXPECT_TRUE(asked);
  ASSERT_TRUE(reaped->carried_out);
  EXPECT_EQ(steps, (std::vector<std::string>{"signalling 1", "escalating 1", "awaiting 1"}));
  ASSERT_EQ(reaped->executions.size(), 1u);
  EXPECT_EQ(reaped->executions[0].signals, (std::vector<int>{SIGTERM, SIGKILL}));
  ASSERT_EQ(reaped->report.outcomes.size(), 1u);
  EXPECT_EQ(reaped->report.outcomes[0].kind, OutcomeKind::Released);
  EXPECT_EQ(reaped->report.exit_code, kExitReleased);
  const Timing& t = reaped->report.timing;
  EXPECT_EQ(t.started, started);
  ASSERT_TRUE(t.signalled && t.verified && t.last_exit);
  EXPECT_LE(t.started, *t.signalled);
  EXPECT_LE(*t.signalled, *t.last_exit);
  EXPECT_LE(*t.verified, t.report);
  int status = exited(stubborn);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

TEST_F(ReapPipeline, WithoutTheGoAheadNothingIsSignalled) {
  pid_t kid = spawn(false);
  auto snapshot = collector_->collect();
  Request request;
  request.pids = {kid};
  bool signalled = false;
  Progress progress;
  progress.signalling = [&](const Plan&) { signalled = true; };
  Pipeline pipeline(*world_, fast(), progress);
  auto declined = pipeline.run(
      snapshot, request, [](Plan&) { return false; }, std::chrono::system_clock::now());
  ASSERT_TRUE(declined.ok());
  EXPECT_FALSE(declined->carried_out);
  EXPECT_EQ(declined->plan.count(Action::Signal), 1u);  // the plan is there to be shown
  // A go-ahead that amends the plan (a policy refusing a target) leaves nothing to signal.
  auto refused = pipeline.run(
      snapshot, request,
      [](Plan& plan) {
        for (auto& t : plan.targets) t.action = Action::Refused;
        return true;
      },
      std::chrono::system_clock::now());
  ASSERT_TRUE(refused.ok());
  EXPECT_FALSE(refused->carried_out);
  EXPECT_FALSE(signalled);
  EXPECT_EQ(::kill(kid, 0), 0);  // still alive
  EXPECT_EQ(exited(kid), -1);
}

TEST_F(ReapPipeline, AMeaninglessRequestFailsBeforeTheGoAhead) {
  auto snapshot = collector_->collect();
  Request request;
  request.user = "no-such-user-gpureap";
  bool asked = false;
  auto r = Pipeline(*world_, fast())
               .run(
                   snapshot, request,
                   [&](Plan&) {
                     asked = true;
                     return true;
                   },
                   std::chrono::system_clock::now());
  EXPECT_FALSE(r.ok());
  EXPECT_FALSE(asked);
}

TEST_F(ReapPipeline, ACollectorsWorldReadsItsProcfsAndItsDrivers) {
  EXPECT_TRUE(world_->signals_reach());  // /proc of gpureap's own namespace
  EXPECT_EQ(world_->proc_root(), "/proc");
  pid_t kid = spawn(false);
  auto st = world_->stat(kid);
  ASSERT_TRUE(st.ok() && *st);
  EXPECT_EQ((*st)->pid, kid);
  EXPECT_EQ((*st)->ppid, ::getpid());
  ASSERT_TRUE(world_->details(kid, false));
  ::kill(kid, SIGKILL);
  ::waitpid(kid, nullptr, 0);
  std::erase(kids_, kid);
  auto gone = world_->stat(kid);
  ASSERT_TRUE(gone.ok());
  EXPECT_FALSE(*gone);                              // no such process: empty, not an error
  EXPECT_TRUE(world_->driver_view().rows.empty());  // no drivers: nothing listed, no /proc scan
  EXPECT_NE(world_->collect().find(::getpid()), nullptr);
}

TEST(ReapKillWait, TheGraceWithinOneToFiveSeconds) {
  using std::chrono::milliseconds;
  EXPECT_EQ(kill_wait_for(milliseconds(200)), milliseconds(1000));
  EXPECT_EQ(kill_wait_for(milliseconds(3000)), milliseconds(3000));
  EXPECT_EQ(kill_wait_for(milliseconds(60000)), milliseconds(5000));
}

}  // namespace
}  // namespace gpureap::reap

// A kill from `top`: planned by the reaper, executed and verified on a thread of its own.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "reap/collector_world.h"
#include "text/display_width.h"
#include "tui/kill_job.h"

namespace gpureap::tui {
namespace {

using text::text_width;

using namespace std::chrono_literals;

class TuiKillJob : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpureap-tui-kill-XXXXXX";
    dev_ = ::mkdtemp(tmpl);
    child_ = ::fork();
    if (child_ == 0) {
      ::signal(SIGTERM, SIG_DFL);
      for (;;) ::pause();
    }
    auto c = collect::Collector::open({"/proc", dev_}, nullptr);
    ASSERT_TRUE(c.ok());
    collector_ = std::make_shared<const collect::Collector>(std::move(*c));
    world_ = std::make_shared<reap::CollectorWorld>(collector_);
  }
  void TearDown() override {
    if (child_ > 0) {
      ::kill(child_, SIGKILL);
      ::waitpid(child_, nullptr, 0);
    }
    std::filesystem::remove_all(dev_);
  }

  std::string dev_;
  pid_t child_ = -1;
  std::shared_ptr<const collect::Collector> collector_;
  std::shared_ptr<const reap::World> world_;
};

TEST_F(TuiKillJob, PlansShowsRunsAndReportsThroughTheReaper) {
  auto snapshot = collector_->collect();
  auto plan = plan_kill(snapshot, {child_}, *world_);
  ASSERT_TRUE(plan.ok()) << plan.error().text();
  ASSERT_EQ(plan->count(reap::Action::Signal), 1u);
  KillConfig config;
  config.exec.grace = 2s;
  config.verify.wait_release = 2s;
  auto lines = plan_lines(snapshot, *plan, {child_}, config, 60);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0].rfind("PID " + std::to_string(child_) + ": 1 process to signal", 0), 0u)
      << lines[0];
  for (const auto& l : lines) EXPECT_LE(text_width(l), 60u) << l;  // prose is wrapped to the dialog

  // top tells the daemon before the first signal: the plan, and the signal the dialog chose.
  std::vector<pid_t> announced;
  int announced_signal = 0;
  bool child_alive_then = false;
  KillJob job(world_, *plan, config, [&](const reap::Plan& p, int signal) {
    for (const auto& t : p.targets) announced.push_back(t.pid);
    announced_signal = signal;
    child_alive_then = ::kill(child_, 0) == 0;
  });
  EXPECT_FALSE(job.finished());
  job.start();
  auto until = std::chrono::steady_clock::now() + 20s;
  while (!job.finished() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(job.finished());
  int status = 0;
  ASSERT_EQ(::waitpid(child_, &status, 0), child_);
  child_ = -1;
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
  EXPECT_EQ(announced, std::vector<pid_t>{plan->targets[0].pid});
  EXPECT_EQ(announced_signal, SIGTERM);
  EXPECT_TRUE(child_alive_then) << "announced after the signal";
  const auto& report = job.report();
  ASSERT_EQ(report.outcomes.size(), 1u);
  EXPECT_EQ(report.outcomes[0].kind, reap::OutcomeKind::Released);
  auto out = outcome_lines(job.plan(), report, 60);
  std::string all;
  for (const auto& l : out) all += l + "\n";
  EXPECT_NE(all.find("released"), std::string::npos) << all;
}

TEST_F(TuiKillJob, ThePlanSaysWhatTheSafetyRulesRefuse) {
  auto snapshot = collector_->collect();
  auto plan = plan_kill(snapshot, {1}, *world_);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->count(reap::Action::Signal), 0u);  // PID 1 is never signalled
  auto lines = plan_lines(snapshot, *plan, {1}, {}, 100);
  std::string all;
  for (const auto& l : lines) all += l + "\n";
  EXPECT_NE(all.find("refused"), std::string::npos) << all;
  EXPECT_NE(all.find("PID 1 (init) is never signalled"), std::string::npos) << all;
}

}  // namespace
}  // namespace gpureap::tui

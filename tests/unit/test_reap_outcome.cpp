// Outcomes and exit codes from plans, executions and verifications.
#include <gtest/gtest.h>

#include "reap/outcome.h"

namespace gpureap::reap {
namespace {

Target target(pid_t pid, Action action, std::string refusal = "") {
  Target t;
  t.pid = pid;
  t.action = action;
  t.refusal = std::move(refusal);
  t.parent = {pid - 1, "parent-comm"};
  return t;
}

Execution status(pid_t pid, ExecStatus s) {
  Execution e;
  e.pid = pid;
  e.status = s;
  return e;
}

Report report(std::vector<Target> targets, std::vector<Execution> execs, Verification v = {}) {
  Plan p;
  p.targets = std::move(targets);
  return compose(p, execs, v);
}

TEST(ReapOutcome, PlansThatCannotActHaveTheirOwnExitCodes) {
  Plan nothing;
  EXPECT_EQ(plan_exit_code(nothing), kExitNoMatch);
  Plan refused;
  refused.targets.push_back(target(10, Action::Refused, "protected"));
  EXPECT_EQ(plan_exit_code(refused), kExitNoMatch);
  Plan denied = refused;
  denied.targets.push_back(target(11, Action::NotPermitted, "owned by bob"));
  EXPECT_EQ(plan_exit_code(denied), kExitEnvironment);
  Plan ok = denied;
  ok.targets.push_back(target(12, Action::Signal));
  EXPECT_EQ(plan_exit_code(ok), kExitReleased);
}

TEST(ReapOutcome, ZombieSurvivesAndNamesItsParent) {
  auto r = report({target(21, Action::Zombie)}, {status(21, ExecStatus::NotAttempted)});
  ASSERT_EQ(r.outcomes.size(), 1u);
  EXPECT_EQ(r.outcomes[0].kind, OutcomeKind::Survived);
  ASSERT_TRUE(r.outcomes[0].parent.has_value());
  EXPECT_EQ(r.outcomes[0].parent->pid, 20);
  EXPECT_EQ(r.outcomes[0].parent->comm, "parent-comm");
  EXPECT_NE(r.outcomes[0].why.find("gpureap kill 20"), std::string::npos);
  EXPECT_EQ(r.exit_code, kExitHeld);
}

TEST(ReapOutcome, ReapedZombieCountsAsGone) {
  Verification v;
  v.reaped_zombies = {21};
  auto r = report({target(21, Action::Zombie)}, {status(21, ExecStatus::NotAttempted)}, v);
  EXPECT_EQ(r.outcomes[0].kind, OutcomeKind::Released);
  EXPECT_EQ(r.exit_code, kExitReleased);
}

TEST(ReapOutcome, MixedResults) {
  auto only_denied = report({target(30, Action::Signal)}, {status(30, ExecStatus::NotPermitted)});
  EXPECT_EQ(only_denied.outcomes[0].kind, OutcomeKind::NotPermitted);
  EXPECT_EQ(only_denied.exit_code, kExitEnvironment);
  auto partly = report({target(30, Action::Signal), target(31, Action::Signal)},
                       {status(30, ExecStatus::NotPermitted), status(31, ExecStatus::Exited)});
  EXPECT_EQ(partly.exit_code, kExitHeld);
  auto survived = report({target(30, Action::Signal)}, {status(30, ExecStatus::Survived)});
  EXPECT_EQ(survived.outcomes[0].kind, OutcomeKind::Survived);
  EXPECT_EQ(survived.exit_code, kExitHeld);
  auto with_refusal =
      report({target(30, Action::Refused, "protected"), target(31, Action::Signal)},
             {status(30, ExecStatus::NotAttempted), status(31, ExecStatus::Exited)});
  EXPECT_EQ(with_refusal.outcomes[0].kind, OutcomeKind::Refused);
  EXPECT_EQ(with_refusal.outcomes[0].why, "protected");
  EXPECT_EQ(with_refusal.exit_code, kExitReleased);
}

TEST(ReapOutcome, FreedMemoryIsTheReleasedListingsKnownFiguresNeverAZeroForUnknown) {
  Plan p;
  p.targets = {target(40, Action::Signal)};
  p.gpus = {{0, 20ull << 30, 0}, {1, 4ull << 30, 0}};
  Verification v;
  v.backend_available = true;
  ListingRelease own{40, 0, 8ull << 30};
  own.released = true;
  v.listings = {own};
  auto r = compose(p, {status(40, ExecStatus::Exited)}, v);
  EXPECT_EQ(r.outcomes[0].kind, OutcomeKind::Released);
  EXPECT_EQ(freed_bytes(r), 8ull << 30);
  // A listing the driver gave no figure for: released, but how much is not known.
  v.listings[0].bytes.reset();
  EXPECT_EQ(freed_bytes(compose(p, {status(40, ExecStatus::Exited)}, v)), std::nullopt);
  // No driver: the target is gone, its memory unknown.
  Verification blind;
  auto gone = compose(p, {status(40, ExecStatus::Exited)}, blind);
  EXPECT_EQ(gone.outcomes[0].kind, OutcomeKind::Released);
  EXPECT_EQ(freed_bytes(gone), std::nullopt);
  // A worker listed nowhere that kept nothing: nothing of its own came back.
  Plan worker;
  worker.targets = {target(41, Action::Signal)};
  worker.gpus = p.gpus;
  Verification none;
  none.backend_available = true;
  EXPECT_EQ(freed_bytes(compose(worker, {status(41, ExecStatus::Exited)}, none)), std::nullopt);
}

}  // namespace
}  // namespace gpureap::reap

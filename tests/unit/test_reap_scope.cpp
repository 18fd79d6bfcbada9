// The selection algebra, as whole plans: selectors (PIDs, --ghosts, --stopped) choose, --gpu and
// --user narrow what they chose (alone, they choose their holders). Every combination on one
// two-GPU scene, with what must be left alone asserted as much as what must be found.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "reap/planner.h"
#include "snapshot_builders.h"

namespace gpureap::reap {
namespace {

using namespace gpureap::testing;

constexpr uid_t kAlice = 1000, kBob = 1001;

core::HostProcess owned(core::HostProcess p, uid_t uid) {
  p.details->uid = uid;
  p.details->user = uid == kAlice ? "alice" : "bob";
  return p;
}

// A process holding /dev/nvidia<minor> on fd 5 through the open file `open_file`.
core::HostProcess holding(pid_t pid, pid_t ppid, pid_t pgid, uid_t uid,
                          std::vector<std::pair<unsigned, std::string>> files, char state = 'S') {
  auto p = owned(proc(pid, ppid, pgid, state), uid);
  int fd = 5;
  for (auto& [minor, open_file] : files) p.devices.push_back(nvidia_hold(minor, {fd++}, open_file));
  return p;
}

// GPU 0: alice's healthy trainer 100 (10 GiB; workers 101 and 102 share its open file; it also
// holds GPU 1's file, as CUDA opens every visible GPU's); bob's gone trainer 200 (8 GiB) kept by
// its orphaned worker 201; bob's zombie 500 (3 GiB) whose child 501 kept its file.
// GPU 1: alice's paused job 300 (4 GiB), and a leak: gone 400 (2 GiB) that nothing holds.
core::Snapshot scene() {
  return make_snapshot(
      {proc(1, 0, 1), holding(100, 1, 100, kAlice, {{0, "100:5"}, {1, "100:6"}}),
       holding(101, 100, 100, kAlice, {{0, "100:5"}}),
       holding(102, 100, 100, kAlice, {{0, "100:5"}}), holding(201, 1, 200, kBob, {{0, "201:5"}}),
       holding(300, 1, 300, kAlice, {{1, "300:5"}}, 'T'), owned(proc(500, 1, 500, 'Z'), kBob),
       holding(501, 500, 500, kBob, {{0, "501:5"}})},
      {gpu(0, 0, 21 * GiB, {listed(100, 10 * GiB), listed(200, 8 * GiB), listed(500, 3 * GiB)}),
       gpu(1, 1, 6 * GiB, {listed(300, 4 * GiB), listed(400, 2 * GiB)})});
}

struct Case {
  std::string name;
  Request request;
  std::vector<pid_t> targets;  // the whole plan: every target, no other
  std::vector<pid_t> gone;     // the gone PIDs it reclaims
  std::string selection;       // the plan's first line
};

Request with(Request r, std::optional<unsigned> gpu, std::optional<uid_t> user) {
  r.gpu = gpu;
  if (user) r.user = std::to_string(*user);
  return r;
}

std::vector<Case> cases() {
  const Request ghosts{.ghosts = true}, stopped{.stopped = true}, named{.pids = {100, 200, 300}},
      both{.ghosts = true, .stopped = true}, none{};
  return {
      {"ghosts", ghosts, {201, 501}, {200, 400, 500}, "ghosts"},
      {"ghosts on GPU 0", with(ghosts, 0, {}), {201, 501}, {200, 500}, "ghosts on GPU 0"},
      {"ghosts on GPU 1", with(ghosts, 1, {}), {}, {400}, "ghosts on GPU 1"},
      {"ghosts of bob", with(ghosts, {}, kBob), {201, 501}, {200, 500}, "ghosts of user 1001"},
      {"ghosts of alice", with(ghosts, {}, kAlice), {}, {}, "ghosts of user 1000"},
      {"ghosts on GPU 0 of bob",
       with(ghosts, 0, kBob),
       {201, 501},
       {200, 500},
       "ghosts on GPU 0 of user 1001"},
      {"ghosts on GPU 0 of alice", with(ghosts, 0, kAlice), {}, {}, "ghosts on GPU 0 of user 1000"},
      {"stopped", stopped, {300}, {}, "stopped holders"},
      {"stopped on GPU 0", with(stopped, 0, {}), {}, {}, "stopped holders on GPU 0"},
      {"stopped on GPU 1", with(stopped, 1, {}), {300}, {}, "stopped holders on GPU 1"},
      {"stopped of alice", with(stopped, {}, kAlice), {300}, {}, "stopped holders of user 1000"},
      {"stopped of bob", with(stopped, {}, kBob), {}, {}, "stopped holders of user 1001"},
      {"PIDs", named, {100, 201, 300}, {200}, "PIDs 100, 200, 300"},
      {"PIDs on GPU 0", with(named, 0, {}), {100, 201}, {200}, "PIDs 100, 200, 300 on GPU 0"},
      {"PIDs on GPU 1", with(named, 1, {}), {300}, {}, "PIDs 100, 200, 300 on GPU 1"},
      {"PIDs of alice", with(named, {}, kAlice), {100, 300}, {}, "PIDs 100, 200, 300 of user 1000"},
      {"PIDs on GPU 0 of bob",
       with(named, 0, kBob),
       {201},
       {200},
       "PIDs 100, 200, 300 on GPU 0 of user 1001"},
      {"ghosts and stopped on GPU 1",
       with(both, 1, {}),
       {300},
       {400},
       "ghosts and stopped holders on GPU 1"},
      {"GPU 0 alone", with(none, 0, {}), {100, 101, 102, 201, 501}, {200, 500}, "holders of GPU 0"},
      {"GPU 1 alone", with(none, 1, {}), {300}, {400}, "holders of GPU 1"},
      {"GPU 0 of bob",
       with(none, 0, kBob),
       {201, 501},
       {200, 500},
       "holders of GPU 0 of user 1001"},
      {"bob alone", with(none, {}, kBob), {201, 501}, {}, "GPU processes of user 1001"},
  };
}

class ReapScope : public ::testing::TestWithParam<Case> {};

TEST_P(ReapScope, PlansExactlyWhatWasAskedFor) {
  const Case& c = GetParam();
  Caller caller;
  caller.self = 60000;
  caller.pgid = 60000;
  auto plan =
      make_plan(scene(), c.request, caller, [](const core::HostProcess&) { return std::nullopt; });
  ASSERT_TRUE(plan.ok()) << plan.error().text();
  std::vector<pid_t> targets, gone;
  for (const auto& t : plan->targets) {
    targets.push_back(t.pid);
    EXPECT_EQ(t.action, Action::Signal) << t.pid << ": " << t.refusal;
  }
  for (const auto& g : plan->gone) gone.push_back(g.pid);
  EXPECT_EQ(targets, c.targets);
  EXPECT_EQ(gone, c.gone);
  EXPECT_EQ(plan->selection, c.selection);
  // Never, whatever the combination: the healthy job's workers unless its GPU is named alone,
  // the paused job unless --stopped or its GPU alone chooses it.
  if (!c.request.stopped && c.request.pids.empty() && c.request.has_selector()) {
    EXPECT_EQ(plan->find(300), nullptr) << "the paused job";
  }
  if (c.request.has_selector()) {
    for (pid_t worker : {101, 102}) EXPECT_EQ(plan->find(worker), nullptr) << worker;
  }
}

INSTANTIATE_TEST_SUITE_P(EverySelectorWithEveryFilter, ReapScope, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           std::string name = info.param.name;
                           for (char& ch : name)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return name;
                         });

TEST(ReapScopeRules, AStoppedUnlistedKeeperOfAGonePidIsStillAGhost) {
  // 201 is paused, but it holds dead 200's memory: no job of its own to resume.
  auto s = make_snapshot({proc(1, 0, 1), holding(201, 1, 200, kBob, {{0, "201:5"}}, 'T')},
                         {gpu(0, 0, 8 * GiB, {listed(200, 8 * GiB)})});
  auto plan = make_plan(s, {.ghosts = true}, Caller{},
                        [](const core::HostProcess&) { return std::nullopt; });
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->targets.size(), 1u);
  EXPECT_EQ(plan->targets[0].pid, 201);
}

TEST(ReapScopeRules, AKeeperIsOnTheGpuOfTheMemoryItKeeps) {
  // 201 keeps gone 200's memory on GPU 1 and, as CUDA does, holds GPU 0's file too.
  auto s = make_snapshot({proc(1, 0, 1), holding(201, 1, 200, kBob, {{0, "201:5"}, {1, "201:6"}})},
                         {gpu(0, 0, 0, {}), gpu(1, 1, 8 * GiB, {listed(200, 8 * GiB)})});
  auto plan_of = [&](Request r) {
    auto p = make_plan(s, r, Caller{}, [](const core::HostProcess&) { return std::nullopt; });
    EXPECT_TRUE(p.ok());
    std::vector<pid_t> out;
    for (const auto& t : p->targets) out.push_back(t.pid);
    return out;
  };
  EXPECT_EQ(plan_of({.gpu = 0, .ghosts = true}), std::vector<pid_t>{});
  EXPECT_EQ(plan_of({.gpu = 1, .ghosts = true}), std::vector<pid_t>{201});
  // Alone, --gpu 0 takes the unlisted holders of its file whose memory is nowhere else; 201's
  // is on GPU 1, so it merely sees GPU 0.
  EXPECT_EQ(plan_of({.gpu = 0}), std::vector<pid_t>{});
  EXPECT_EQ(plan_of({.gpu = 1}), std::vector<pid_t>{201});
}

TEST(ReapScopeRules, TheEpilogsGpuAndUserLeaveThatUsersJobOnAnotherGpuAlone) {
  // Slurm's epilog cleans GPU 1 of alice's finished step: `kill --gpu 1 --user alice`. Alice's
  // healthy trainer 100 runs on GPU 0; it opened both GPUs' files, as CUDA does, and its workers
  // 101 and 102 inherited both. They merely see GPU 1: only her paused job there is planned.
  auto s = make_snapshot(
      {proc(1, 0, 1), holding(100, 1, 100, kAlice, {{0, "100:5"}, {1, "100:6"}}),
       holding(101, 100, 100, kAlice, {{0, "100:5"}, {1, "100:6"}}),
       holding(102, 100, 100, kAlice, {{0, "100:5"}, {1, "100:6"}}),
       holding(300, 1, 300, kAlice, {{1, "300:5"}}, 'T'),
       holding(310, 1, 310, kAlice, {{1, "310:5"}})},
      {gpu(0, 0, 10 * GiB, {listed(100, 10 * GiB)}), gpu(1, 1, 4 * GiB, {listed(300, 4 * GiB)})});
  auto plan_of = [&](Request r) {
    auto p = make_plan(s, r, Caller{}, [](const core::HostProcess&) { return std::nullopt; });
    EXPECT_TRUE(p.ok());
    std::vector<pid_t> out;
    for (const auto& t : p->targets) out.push_back(t.pid);
    std::sort(out.begin(), out.end());
    return out;
  };
  // 310 holds GPU 1's file with no listed memory anywhere: it may keep a context or block a
  // reset, so the GPU's own holders include it.
  EXPECT_EQ(plan_of({.gpu = 1, .user = std::to_string(kAlice)}), (std::vector<pid_t>{300, 310}));
  EXPECT_EQ(plan_of({.gpu = 1}), (std::vector<pid_t>{300, 310}));
  EXPECT_EQ(plan_of({.gpu = 0, .user = std::to_string(kAlice)}),
            (std::vector<pid_t>{100, 101, 102}));
  // As a filter too: the workers, named, are not on GPU 1.
  EXPECT_EQ(plan_of({.pids = {101, 102, 300}, .gpu = 1}), std::vector<pid_t>{300});
  EXPECT_EQ(plan_of({.pids = {101, 102, 300}, .gpu = 0}), (std::vector<pid_t>{101, 102}));
}

TEST(ReapScopeRules, AFilterOnAGpuThatDoesNotExistIsAnError) {
  auto plan = make_plan(scene(), {.gpu = 5, .ghosts = true}, Caller{},
                        [](const core::HostProcess&) { return std::nullopt; });
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.error().message, "GPU 5 does not exist");
}

}  // namespace
}  // namespace gpureap::reap

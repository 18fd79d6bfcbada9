// Planning is pure over a hand-built snapshot: which processes a request reaches, and why.
#include <gtest/gtest.h>

#include <algorithm>

#include "reap/planner.h"
#include "snapshot_builders.h"

namespace gpureap::reap {
namespace {

using namespace gpureap::testing;

Caller root_caller() {
  Caller c;
  c.self = 60000;
  c.pgid = 60000;
  c.ancestors = {59999, 1};
  return c;
}

std::optional<core::ProcessDetails> no_details(const core::HostProcess&) {
  return std::nullopt;
}

Plan plan_for(const core::Snapshot& s, const Request& r, const Caller& c = root_caller()) {
  auto p = make_plan(s, r, c, no_details);
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().text());
  return p.ok() ? *p : Plan{};
}

std::vector<pid_t> pids(const Plan& p) {
  std::vector<pid_t> out;
  for (const auto& t : p.targets) out.push_back(t.pid);
  return out;
}

bool has_reason(const Plan& p, pid_t pid, Reason r) {
  const Target* t = p.find(pid);
  return t && std::find(t->reasons.begin(), t->reasons.end(), r) != t->reasons.end();
}

// 300 died; its workers 301 and 302 (group 300) keep GPU 0's file; 400 is a healthy listed
// trainer on GPU 1 with a child 401 that holds nothing; 500 is an idle unrelated holder of GPU 0.
core::Snapshot ghost_world() {
  return make_snapshot(
      {proc(1, 0, 1), holder(301, 1, 300), holder(302, 1, 300), holder(400, 1, 400, 1),
       proc(401, 400, 400), holder(500, 1, 500)},
      {gpu(0, 0, 9 * GiB, {listed(300, 8 * GiB)}), gpu(1, 1, 20 * GiB, {listed(400, 16 * GiB)})});
}

TEST(ReapPlanner, NamedLivePidIsATargetWithItsListedMemory) {
  auto p = plan_for(ghost_world(), {.pids = {400}});
  ASSERT_EQ(pids(p), std::vector<pid_t>{400});
  const Target& t = p.targets[0];
  EXPECT_TRUE(t.named());
  EXPECT_EQ(t.action, Action::Signal);
  EXPECT_EQ(t.memory_bytes(), 16 * GiB);
  EXPECT_EQ(t.start_ticks, 1400u);
  EXPECT_EQ(t.user, "root");
  EXPECT_EQ(t.comm, "p400");
  ASSERT_EQ(p.gpus.size(), 2u);
  EXPECT_EQ(p.gpus[0].unattributed_bytes, GiB);
}

TEST(ReapPlanner, GoneListedPidResolvesToTheHoldersInItsGroup) {
  auto p = plan_for(ghost_world(), {.pids = {300}});
  EXPECT_EQ(pids(p), (std::vector<pid_t>{301, 302}));  // not 500: outside its tree and group
  for (pid_t w : {301, 302}) {
    EXPECT_TRUE(has_reason(p, w, {ReasonKind::InheritedHolder, std::nullopt, 300}));
    EXPECT_EQ(p.find(w)->keeps, std::vector<pid_t>{300});
    EXPECT_EQ(p.find(w)->memory_bytes(), std::nullopt);  // the memory is the gone PID's
  }
  ASSERT_EQ(p.gone.size(), 1u);
  EXPECT_EQ(p.gone[0].pid, 300);
  EXPECT_EQ(p.gone[0].memory_bytes(), 8 * GiB);
  EXPECT_EQ(p.gone[0].keepers, (std::vector<pid_t>{301, 302}));
  EXPECT_FALSE(p.gone[0].leaked);
}

TEST(ReapPlanner, GonePidResolvesToDescendantsHoldingItsGpu) {
  // 700 is a zombie (gone for GPU purposes); 701 is its child and holds GPU 0's file; 702 its
  // child without device files is not a keeper.
  auto s = make_snapshot(
      {proc(1, 0, 1), proc(700, 1, 700, 'Z'), holder(701, 700, 701), proc(702, 700, 702)},
      {gpu(0, 0, 4 * GiB, {listed(700, 4 * GiB)})});
  auto p = plan_for(s, {.pids = {700}});
  EXPECT_EQ(pids(p), (std::vector<pid_t>{700, 701}));
  EXPECT_EQ(p.find(700)->action, Action::Zombie);
  EXPECT_TRUE(has_reason(p, 701, {ReasonKind::InheritedHolder, std::nullopt, 700}));
}

TEST(ReapPlanner, GoneUnkeptPidIsALeakWithANote) {
  auto s = make_snapshot({proc(1, 0, 1)}, {gpu(0, 0, 8 * GiB, {listed(999, 8 * GiB)})});
  auto p = plan_for(s, {.pids = {999}});
  EXPECT_TRUE(p.nothing_matched());
  ASSERT_EQ(p.gone.size(), 1u);
  EXPECT_TRUE(p.gone[0].leaked);
  ASSERT_EQ(p.notes.size(), 1u);
  EXPECT_NE(p.notes[0].find("leaked context"), std::string::npos);
}

TEST(ReapPlanner, UnknownPidIsANoteNotATarget) {
  auto p = plan_for(ghost_world(), {.pids = {12345}});
  EXPECT_TRUE(p.nothing_matched());
  ASSERT_EQ(p.notes.size(), 1u);
  EXPECT_NE(p.notes[0].find("12345"), std::string::npos);
}

// A typed thread id is told as its process's thread, once, and in place of a selection that
// would call it a PID; neither it nor its process is chosen, whatever widens it.
TEST(ReapPlanner, ATypedThreadIsToldAndChoosesNeitherItNorItsProcess) {
  const std::vector<NamedThread> threads{{401 + 1000, 400, "trainer"}};
  for (Request r : {Request{.pids = {1401}}, Request{.pids = {1401}, .tree = true},
                    Request{.pids = {1401}, .group = true}, Request{.pids = {1401, 1401}},
                    Request{.pids = {1401}, .gpu = 1}}) {
    auto p = make_plan(ghost_world(), r, root_caller(), no_details, threads);
    ASSERT_TRUE(p.ok());
    EXPECT_TRUE(p->nothing_matched()) << pids(*p).size();
    EXPECT_TRUE(p->gone.empty());
    EXPECT_TRUE(p->notes.empty()) << p->notes.front();
    EXPECT_EQ(p->selection, "") << "nothing but a thread was asked for";
    ASSERT_EQ(p->threads.size(), 1u);
    EXPECT_EQ(p->threads[0].tid, 1401);
    EXPECT_EQ(p->threads[0].process, 400);
    EXPECT_EQ(describe(p->threads[0]),
              "TID 1401 is a thread of process 400 (trainer), not a process; gpureap signals "
              "whole processes, so nothing was chosen for it: `gpureap kill 400` ends that "
              "process, all its threads with it");
  }
  // Named beside it, the process is chosen for its own name, once; the selection is its PID.
  auto p = make_plan(ghost_world(), {.pids = {1401, 400}}, root_caller(), no_details, threads);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(pids(*p), std::vector<pid_t>{400});
  EXPECT_EQ(p->selection, "PID 400");
  EXPECT_EQ(p->threads.size(), 1u);
  // Beside a number that is nothing, that one is what matched nothing.
  auto q = make_plan(ghost_world(), {.pids = {12345, 1401}}, root_caller(), no_details, threads);
  ASSERT_TRUE(q.ok());
  EXPECT_TRUE(q->nothing_matched());
  EXPECT_EQ(q->selection, "PID 12345");
  ASSERT_EQ(q->notes.size(), 1u);
  EXPECT_NE(q->notes[0].find("PID 12345: no such process"), std::string::npos) << q->notes[0];
  EXPECT_EQ(q->threads.size(), 1u);
}

TEST(ReapPlanner, GpuSelectsListedProcessesGhostKeepersAndUnlistedHolders) {
  auto p = plan_for(ghost_world(), {.gpu = 0});
  EXPECT_EQ(pids(p), (std::vector<pid_t>{301, 302, 500}));
  EXPECT_TRUE(has_reason(p, 500, {ReasonKind::HoldsDevice, 0u}));
  EXPECT_TRUE(has_reason(p, 301, {ReasonKind::InheritedHolder, std::nullopt, 300}));
  auto p1 = plan_for(ghost_world(), {.gpu = 1});
  EXPECT_EQ(pids(p1), std::vector<pid_t>{400});
  EXPECT_TRUE(has_reason(p1, 400, {ReasonKind::ListedOnGpu, 1u}));
}

TEST(ReapPlanner, GpuDoesNotTakeAProcessListedOnlyOnAnotherGpu) {
  // 400 uses GPU 1 but, as CUDA does, also holds GPU 0's file.
  auto trainer = holder(400, 1, 400, 1);
  trainer.devices.push_back(nvidia_hold(0, {7}));
  auto s = make_snapshot({proc(1, 0, 1), trainer},
                         {gpu(0, 0, 0, {}), gpu(1, 1, 16 * GiB, {listed(400, 16 * GiB)})});
  EXPECT_TRUE(plan_for(s, {.gpu = 0}).nothing_matched());
  EXPECT_EQ(pids(plan_for(s, {.gpu = 1})), std::vector<pid_t>{400});
}

TEST(ReapPlanner, UnknownGpuIsAnError) {
  auto r = make_plan(ghost_world(), {.gpu = 7}, root_caller(), no_details);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("GPU 7"), std::string::npos);
}

TEST(ReapPlanner, WithoutADriverGpuNIsNeverGuessedFromTheDeviceMinor) {
  auto s = make_snapshot({proc(1, 0, 1), holder(400, 1, 400, 1), holder(500, 1, 500)}, {});
  s.drivers.backends.at(0).available = false;
  s.drivers.backends.at(0).error = "NVML did not answer within 2s";
  auto r = make_plan(s, {.gpu = 1}, root_caller(), no_details);
  ASSERT_FALSE(r.ok()) << "holders of /dev/nvidia1 would be a guess";
  EXPECT_NE(r.error().message.find("cannot tell which device files are GPU 1"), std::string::npos)
      << r.error().message;
}

TEST(ReapPlanner, WithoutADriverTheKernelsGpuMapNamesTheFiles) {
  // The driver is wedged; the kernel says GPU 0 (the first by PCI bus) is minor 1, GPU 1 minor 0.
  auto first = gpu(0, 1, 0, {}), second = gpu(1, 0, 0, {});
  for (auto* g : {&first, &second}) {
    g->memory = {};
    g->known_from_kernel = "the kernel's /proc/driver/nvidia/gpus";
  }
  first.pci_bus_id = "0000:01:00.0";
  second.pci_bus_id = "0000:02:00.0";
  auto s = make_snapshot({proc(1, 0, 1), holder(400, 1, 400, 1), holder(500, 1, 500, 0)},
                         {first, second});
  s.drivers.backends.at(0).available = false;
  auto p = plan_for(s, {.gpu = 0});
  EXPECT_EQ(pids(p), std::vector<pid_t>{400}) << "GPU 0 is /dev/nvidia1";
  EXPECT_TRUE(has_reason(p, 400, {ReasonKind::HoldsDevice, 0u}));
  EXPECT_NE(std::find_if(p.notes.begin(), p.notes.end(),
                         [](const std::string& n) {
                           return n.find("GPU 0 is 0000:01:00.0 (device minor 1)") == 0;
                         }),
            p.notes.end());
}

TEST(ReapPlanner, GhostsNeverTakeAPausedJobAndStoppedDoes) {
  auto s = make_snapshot(
      {proc(1, 0, 1), holder(301, 1, 300), holder(302, 1, 300), holder(400, 1, 400, 1),
       holder(600, 1, 600, 1, 'T'), proc(601, 1, 601, 'T')},
      {gpu(0, 0, 9 * GiB, {listed(300, 8 * GiB)}), gpu(1, 1, 20 * GiB, {listed(400, 16 * GiB)})});
  auto p = plan_for(s, {.ghosts = true});
  // 400 is healthy; 600 is a paused job; 601 is stopped but holds nothing.
  EXPECT_EQ(pids(p), (std::vector<pid_t>{301, 302}));
  EXPECT_TRUE(has_reason(
      p, 301, {ReasonKind::Ghost, std::nullopt, std::nullopt, core::Anomaly::InheritedHolder}));
  EXPECT_TRUE(
      has_reason(p, 301, {ReasonKind::Ghost, std::nullopt, std::nullopt, core::Anomaly::Orphan}));
  EXPECT_TRUE(has_reason(p, 301, {ReasonKind::InheritedHolder, std::nullopt, 300}));
  ASSERT_EQ(p.gone.size(), 1u);
  auto paused = plan_for(s, {.stopped = true});
  EXPECT_EQ(pids(paused), std::vector<pid_t>{600});
  EXPECT_TRUE(has_reason(paused, 600, {ReasonKind::StoppedHolder}));
}

TEST(ReapPlanner, TreeAddsEveryDescendant) {
  auto s = make_snapshot({proc(1, 0, 1), holder(400, 1, 400), proc(401, 400, 400),
                          proc(402, 401, 402), proc(403, 1, 400)},
                         {gpu(0, 0, 16 * GiB, {listed(400, 16 * GiB)})});
  auto p = plan_for(s, {.pids = {400}, .tree = true});
  EXPECT_EQ(pids(p), (std::vector<pid_t>{400, 401, 402}));
  EXPECT_TRUE(has_reason(p, 402, {ReasonKind::Descendant, std::nullopt, 400}));
}

TEST(ReapPlanner, GroupAddsEveryMemberOfTheTargetsGroups) {
  auto s = make_snapshot({proc(1, 0, 1), holder(400, 1, 400), proc(401, 400, 400),
                          proc(402, 401, 402), proc(403, 1, 400)},
                         {gpu(0, 0, 16 * GiB, {listed(400, 16 * GiB)})});
  auto p = plan_for(s, {.pids = {400}, .group = true});
  EXPECT_EQ(pids(p), (std::vector<pid_t>{400, 401, 403}));  // 402 has a group of its own
  EXPECT_TRUE(has_reason(p, 403, {ReasonKind::ProcessGroup, std::nullopt, 400}));
}

TEST(ReapPlanner, GroupOfAGonePidIsExpanded) {
  auto s = make_snapshot({proc(1, 0, 1), holder(301, 1, 300), proc(303, 1, 300)},
                         {gpu(0, 0, 8 * GiB, {listed(300, 8 * GiB)})});
  auto p = plan_for(s, {.pids = {300}, .group = true});
  EXPECT_EQ(pids(p), (std::vector<pid_t>{301, 303}));
}

TEST(ReapPlanner, AReusedNumbersGroupIsTheNewcomersAndIsNeverExpanded) {
  // 300 is listed, but the process at 300 now holds no GPU file: another process, leading a
  // group of that number with its child 303. Neither is planned, whatever is asked.
  auto s = make_snapshot({proc(1, 0, 1), proc(300, 1, 300), proc(303, 300, 300)},
                         {gpu(0, 0, 8 * GiB, {listed(300, 8 * GiB)})});
  ASSERT_TRUE(s.row(300)->reused.has_value());
  for (bool group : {false, true})
    for (bool tree : {false, true}) {
      auto p = plan_for(s, {.pids = {300}, .tree = tree, .group = group});
      EXPECT_TRUE(p.targets.empty()) << "group " << group << " tree " << tree;
      ASSERT_EQ(p.gone.size(), 1u);
    }
  EXPECT_TRUE(plan_for(s, {.ghosts = true, .group = true}).targets.empty());
  EXPECT_TRUE(plan_for(s, {.gpu = 0}).targets.empty());
}

TEST(ReapPlanner, TreeNeverFollowsAParentReadWithAReusedNumber) {
  // 500 was read while its parent was 402, which ended; the target's child took the number 402
  // before /proc was read there, and started after 500. --tree reaches 402, not 500 nor 501.
  auto stranger = proc(500, 402, 500);
  stranger.stat.start_ticks = 900;
  auto strangers_child = proc(501, 500, 500);
  strangers_child.stat.start_ticks = 901;
  auto s = make_snapshot(
      {proc(1, 0, 1), holder(400, 1, 400), proc(402, 400, 400), stranger, strangers_child},
      {gpu(0, 0, 16 * GiB, {listed(400, 16 * GiB)})});
  auto p = plan_for(s, {.pids = {400}, .tree = true});
  EXPECT_EQ(pids(p), (std::vector<pid_t>{400, 402}));
}

TEST(ReapPlanner, AGoneNumbersGroupWithNoneOfItsKeepersIsNotExpanded) {
  // 300 is listed and gone; 301, in a group of its own, holds GPU 0's file, but nothing in this
  // snapshot ties it to 300. Group 300 holds only 303, whose leader took the number 300 after
  // the trainer ended and has ended too: it is not the gone job's, and nothing is planned.
  auto s = make_snapshot({proc(1, 0, 1), holder(301, 1, 301), proc(303, 1, 300)},
                         {gpu(0, 0, 8 * GiB, {listed(300, 8 * GiB)})});
  for (const Request& r :
       {Request{.pids = {300}, .group = true}, Request{.ghosts = true, .group = true}}) {
    auto p = plan_for(s, r);
    EXPECT_EQ(pids(p), std::vector<pid_t>{});
    EXPECT_TRUE(std::any_of(p.notes.begin(), p.notes.end(), [](const std::string& n) {
      return n.find("process group 300 was not expanded") != std::string::npos;
    }));
  }
}

TEST(ReapPlanner, SystemAndOwnProcessGroupsAreNotExpanded) {
  auto s = make_snapshot(
      {proc(1, 0, 1), holder(20, 1, 1), proc(21, 1, 1), holder(30, 1, 60000), proc(31, 1, 60000)},
      {gpu(0, 0, 0, {})});
  auto p = plan_for(s, {.pids = {20, 30}, .group = true});
  EXPECT_EQ(pids(p), (std::vector<pid_t>{20, 30}));
  EXPECT_EQ(p.notes.size(), 2u);
}

TEST(ReapPlanner, UserNarrowsTheSelection) {
  auto alice = holder(301, 1, 300);
  alice.details->uid = 1000;
  alice.details->user = "alice";
  auto s = make_snapshot({proc(1, 0, 1), alice, holder(302, 1, 300)},
                         {gpu(0, 0, 8 * GiB, {listed(300, 8 * GiB)})});
  auto p = plan_for(s, {.pids = {300}, .user = "1000"});
  EXPECT_EQ(pids(p), std::vector<pid_t>{301});
  EXPECT_EQ(p.gone[0].keepers, std::vector<pid_t>{301});
  auto alone = plan_for(s, {.user = "1000"});
  EXPECT_EQ(pids(alone), std::vector<pid_t>{301});
  EXPECT_TRUE(has_reason(alone, 301, {ReasonKind::UserHolder}));
  EXPECT_FALSE(make_plan(s, {.user = "no-such-user-xyz"}, root_caller(), no_details).ok());
}

TEST(ReapPlanner, DetailsAreReadForTargetsTheSnapshotHasNoneFor) {
  auto bare = proc(401, 400, 400);
  bare.details.reset();
  auto s = make_snapshot({proc(1, 0, 1), holder(400, 1, 400), bare}, {gpu(0, 0, 0, {})});
  int asked = 0;
  auto details = [&](const core::HostProcess& p) -> std::optional<core::ProcessDetails> {
    ++asked;
    core::ProcessDetails d;
    d.uid = 1234;
    d.cmdline = {"worker", std::to_string(p.stat.pid)};
    return d;
  };
  auto p = make_plan(s, {.pids = {400}, .tree = true}, root_caller(), details);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(asked, 1);
  EXPECT_EQ(p->find(401)->uid, 1234u);
  EXPECT_EQ(p->find(401)->cmdline, (std::vector<std::string>{"worker", "401"}));
}

}  // namespace
}  // namespace gpureap::reap

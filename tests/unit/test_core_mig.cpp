// MIG instances in the model: the N/G notation and --gpu's parser, a holder placed in the instance
// whose capability files it holds, and whole kill plans narrowed to one GPU instance.
#include <gtest/gtest.h>
#include <sys/sysmacros.h>

#include <algorithm>

#include "core/gpu_place.h"
#include "doctor/diagnose.h"
#include "doctor/reset_guard.h"
#include "output/ps_select.h"
#include "reap/planner.h"
#include "snapshot_builders.h"

namespace gpureap::testing {
namespace {

constexpr unsigned kCapsMajor = 234;

core::DeviceHold cap_hold(unsigned minor, int fd) {
  return {"/dev/nvidia-caps/nvidia-cap" + std::to_string(minor),
          "nvidia-cap",
          ::makedev(kCapsMajor, minor),
          false,
          {fd},
          std::nullopt};
}

core::GpuInstance mig_instance(unsigned gi, unsigned gi_minor, unsigned ci_minor,
                               std::string uuid) {
  core::GpuInstance i;
  i.gpu_instance_id = gi;
  i.compute_instance_id = 0;
  i.profile = "1g.10gb";
  i.kind = "MIG";
  i.uuid = std::move(uuid);
  i.memory.total_bytes = 10 * GiB;
  i.device_numbers = {::makedev(kCapsMajor, gi_minor), ::makedev(kCapsMajor, ci_minor)};
  return i;
}

core::DriverProcess on_instance(pid_t pid, uint64_t bytes, unsigned gi) {
  auto p = listed(pid, bytes);
  p.gpu_instance_id = gi;
  p.compute_instance_id = 0;
  return p;
}

// MIG GPU 0 with GPU instances 3 and 5: gone trainer 4242 on GI 3, kept by its worker 4250
// (holds GI 3's capability files); gone trainer 5252 on GI 5, kept by 5260 (GI 5's files);
// live job 6000 on GI 5.
core::Snapshot mig_scene() {
  auto g = gpu(0, 0, 18 * GiB,
               {on_instance(4242, 8 * GiB, 3), on_instance(5252, 4 * GiB, 5),
                on_instance(6000, 6 * GiB, 5)});
  g.split_mode = true;
  g.instances = {mig_instance(3, 30, 31, "MIG-3"), mig_instance(5, 50, 51, "MIG-5")};
  auto keeper3 = holder(4250, 1, 4242);
  keeper3.devices.push_back(cap_hold(30, 7));
  keeper3.devices.push_back(cap_hold(31, 8));
  auto keeper5 = holder(5260, 1, 5252);
  keeper5.devices.push_back(cap_hold(50, 7));
  auto job = holder(6000, 1, 6000);
  job.devices.push_back(cap_hold(50, 7));
  return make_snapshot({proc(1, 0, 1), keeper3, keeper5, job}, {g});
}

TEST(CoreMig, ParsesIndexInstanceAndUuid) {
  auto plain = core::parse_gpu_ref("2");
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->index, 2u);
  EXPECT_FALSE(plain->gpu_instance);
  auto mig = core::parse_gpu_ref("0/13");
  ASSERT_TRUE(mig);
  EXPECT_EQ(mig->index, 0u);
  EXPECT_EQ(mig->gpu_instance, 13u);
  auto compute = core::parse_gpu_ref("0/3/1");
  ASSERT_TRUE(compute);
  EXPECT_EQ(compute->gpu_instance, 3u);
  EXPECT_EQ(compute->compute_instance, 1u);
  auto uuid = core::parse_gpu_ref("MIG-0c7ebb6a-1111");
  ASSERT_TRUE(uuid);
  EXPECT_EQ(uuid->uuid, "MIG-0c7ebb6a-1111");
  for (const char* bad :
       {"", "/", "0/", "/3", "a", "0/x", "0/3/", "0/3/x", "0/3/1/2", "-1", "1 ", "MIG-", "0x1"})
    EXPECT_FALSE(core::parse_gpu_ref(bad)) << bad;
}

TEST(CoreMig, ResolvesAgainstTheSnapshotsInstances) {
  const auto s = mig_scene();
  auto by_uuid = core::resolve_gpu_ref(s, {.uuid = "MIG-5"});
  ASSERT_TRUE(by_uuid) << by_uuid.error().text();
  EXPECT_EQ(by_uuid->index, 0u);
  EXPECT_EQ(by_uuid->gpu_instance, 5u);
  auto missing = core::resolve_gpu_ref(s, {0u, 4u, std::nullopt});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message,
            "GPU 0 has no GPU instance 4 (its instances: 3, 5, written 0/3)");
  EXPECT_FALSE(core::resolve_gpu_ref(s, {.uuid = "MIG-9"}));
  auto whole = core::resolve_gpu_ref(s, {0u, std::nullopt, std::nullopt});
  ASSERT_TRUE(whole);
  EXPECT_FALSE(whole->gpu_instance);
}

TEST(CoreMig, AKeeperIsInTheInstanceWhoseCapabilityFilesItHolds) {
  const auto s = mig_scene();
  ASSERT_NE(s.ghost(4242), nullptr);
  EXPECT_EQ(s.ghost(4242)->keepers, std::vector<pid_t>{4250});
  EXPECT_EQ(core::row_instance(s, *s.row(4250), 0), 3u);
  EXPECT_EQ(core::row_instance(s, *s.row(5260), 0), 5u);
  EXPECT_EQ(core::row_instance(s, *s.row(4242), 0), 3u);  // where the driver lists it
  EXPECT_EQ(core::instance_label(s.drivers.gpus[0].instances[0]), "MIG 1g.10gb (GI 3, CI 0)");
}

std::vector<pid_t> planned(const core::Snapshot& s, reap::Request r) {
  reap::Caller caller;
  caller.self = 60000;
  caller.pgid = 60000;
  auto plan = reap::make_plan(s, r, caller, [](const core::HostProcess&) { return std::nullopt; });
  EXPECT_TRUE(plan.ok()) << (plan.ok() ? "" : plan.error().text());
  std::vector<pid_t> targets;
  if (plan.ok())
    for (const auto& t : plan->targets) targets.push_back(t.pid);
  return targets;
}

TEST(CoreMig, GpuInstanceNarrowsWholePlansExactly) {
  const auto s = mig_scene();
  EXPECT_EQ(planned(s, {.gpu = 0, .ghosts = true}), (std::vector<pid_t>{4250, 5260}));
  EXPECT_EQ(planned(s, {.gpu = 0, .ghosts = true, .instance = core::GpuPlace{0, 3}}),
            std::vector<pid_t>{4250});
  EXPECT_EQ(planned(s, {.gpu = 0, .ghosts = true, .instance = core::GpuPlace{0, 5}}),
            std::vector<pid_t>{5260});
  // Alone: what is listed in GI 5 (the gone PID through its keeper) and its files' holders.
  EXPECT_EQ(planned(s, {.gpu = 0, .instance = core::GpuPlace{0, 5}}),
            (std::vector<pid_t>{5260, 6000}));
  EXPECT_EQ(planned(s, {.pids = {6000}, .gpu = 0, .instance = core::GpuPlace{0, 3}}),
            std::vector<pid_t>{});
}

// MIG GPU 0's GPU instance 7 split into compute instances 0 and 1 (one GI capability file, one
// per CI): alice's live job 7000 on CI 0; on CI 1, bob's gone trainer 7100 kept by its worker
// 7110, and bob's live job 7200.
core::Snapshot compute_instance_scene() {
  auto on_ci = [](pid_t pid, uint64_t bytes, unsigned ci) {
    auto p = on_instance(pid, bytes, 7);
    p.compute_instance_id = ci;
    return p;
  };
  auto g = gpu(0, 0, 9 * GiB,
               {on_ci(7000, 3 * GiB, 0), on_ci(7100, 4 * GiB, 1), on_ci(7200, 2 * GiB, 1)});
  g.split_mode = true;
  auto ci0 = mig_instance(7, 70, 71, "MIG-7-0");
  auto ci1 = mig_instance(7, 70, 72, "MIG-7-1");
  ci1.compute_instance_id = 1;
  g.instances = {ci0, ci1};
  auto with_caps = [](core::HostProcess p, unsigned ci_minor) {
    p.devices.push_back(cap_hold(70, 7));
    p.devices.push_back(cap_hold(ci_minor, 8));
    return p;
  };
  return make_snapshot({proc(1, 0, 1), with_caps(holder(7000, 1, 7000), 71),
                        with_caps(holder(7110, 1, 7100), 72), with_caps(holder(7200, 1, 7200), 72)},
                       {g});
}

TEST(CoreMig, AComputeInstancesUuidSelectsThatComputeInstanceOnly) {
  const auto s = compute_instance_scene();
  auto place = core::resolve_gpu_ref(s, {.uuid = "MIG-7-0"});
  ASSERT_TRUE(place) << place.error().text();
  EXPECT_EQ(*place, (core::GpuPlace{0, 7, 0}));
  EXPECT_EQ(core::gpu_place_text(*place), "0/7/0");
  // Alone, CI 0 is alice's job only; bob's ghost, its keeper and his job are on CI 1.
  EXPECT_EQ(planned(s, {.gpu = 0, .instance = *place}), std::vector<pid_t>{7000});
  EXPECT_EQ(planned(s, {.gpu = 0, .ghosts = true, .instance = *place}), std::vector<pid_t>{});
  const core::GpuPlace ci1{0, 7, 1};
  EXPECT_EQ(planned(s, {.gpu = 0, .ghosts = true, .instance = ci1}), std::vector<pid_t>{7110});
  auto alone = planned(s, {.gpu = 0, .instance = ci1});
  std::sort(alone.begin(), alone.end());
  EXPECT_EQ(alone, (std::vector<pid_t>{7110, 7200}));
  // The whole GPU instance is both.
  auto both = planned(s, {.gpu = 0, .instance = core::GpuPlace{0, 7}});
  std::sort(both.begin(), both.end());
  EXPECT_EQ(both, (std::vector<pid_t>{7000, 7110, 7200}));
  EXPECT_FALSE(core::resolve_gpu_ref(s, {0u, 7u, 2u}));  // no CI 2
}

TEST(CoreMig, InGpuInstanceFollowsTheListingTheKeptMemoryAndTheFiles) {
  auto s = mig_scene();
  auto in = [&](pid_t pid, unsigned gi) { return core::in_place(s, *s.row(pid), {0, gi}); };
  EXPECT_TRUE(in(4242, 3));  // listed there
  EXPECT_FALSE(in(4242, 5));
  EXPECT_TRUE(in(4250, 3));  // keeps 4242's memory, in GI 3
  EXPECT_FALSE(in(4250, 5));
  EXPECT_TRUE(in(5260, 5));
  EXPECT_TRUE(in(6000, 5));  // listed in GI 5
  EXPECT_FALSE(in(6000, 3));
  EXPECT_FALSE(core::in_place(s, *s.row(6000), {1, 5}));  // no GPU 1
}

std::vector<pid_t> rows_of(const core::Snapshot& s) {
  std::vector<pid_t> out;
  for (const auto& r : s.rows) out.push_back(r.pid);
  return out;
}

TEST(MigPsSelect, AGpuInstanceNarrowsRowsAndInstanceLinesNeverTheFigures) {
  const auto s = mig_scene();
  output::PsSelection sel;
  ASSERT_TRUE(output::add_gpu_values(sel, {"0/3"}));
  EXPECT_TRUE(sel.gpus.empty());
  EXPECT_EQ(sel.gpu_places, std::vector<std::string>{"0/3"});
  EXPECT_FALSE(output::check_selection(s, sel));
  auto on3 = output::select_rows(s, sel);
  EXPECT_EQ(rows_of(on3), (std::vector<pid_t>{4242, 4250}));
  ASSERT_EQ(on3.drivers.gpus.size(), 1u);
  ASSERT_EQ(on3.drivers.gpus[0].instances.size(), 1u);
  EXPECT_EQ(on3.drivers.gpus[0].instances[0].gpu_instance_id, 3u);
  EXPECT_EQ(on3.drivers.gpus[0].memory.used_bytes, s.drivers.gpus[0].memory.used_bytes);
  const auto whole = s.memory_summary(s.drivers.gpus[0]);
  const auto shown = on3.figures().memory_summary(on3.figures().drivers.gpus[0]);
  EXPECT_EQ(shown.attributed_bytes, whole.attributed_bytes);
  EXPECT_EQ(shown.ghost_bytes, whole.ghost_bytes);

  output::PsSelection by_uuid;
  ASSERT_TRUE(output::add_gpu_values(by_uuid, {"MIG-5"}));
  EXPECT_EQ(rows_of(output::select_rows(s, by_uuid)), (std::vector<pid_t>{5252, 5260, 6000}));
  // With the whole GPU named as well, every instance line stays.
  output::PsSelection both;
  ASSERT_TRUE(output::add_gpu_values(both, {"0", "0/3"}));
  EXPECT_EQ(both.gpus, std::vector<unsigned>{0});
  EXPECT_EQ(output::select_rows(s, both).drivers.gpus[0].instances.size(), 2u);

  output::PsSelection missing;
  ASSERT_TRUE(output::add_gpu_values(missing, {"0/4"}));
  auto bad = output::check_selection(s, missing);
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->error.message, "GPU 0 has no GPU instance 4 (its instances: 3, 5, written 0/3)");
  output::PsSelection typo;
  auto refused = output::add_gpu_values(typo, {"0/x"});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message, "--gpu 0/x names no GPU");
}

TEST(MigDoctor, AGpuInstanceKeepsOnlyFindingsAboutItsProcesses) {
  const auto s = mig_scene();
  auto pids_of = [&](std::optional<unsigned> gi) {
    doctor::DoctorInput in{s, s, {}, 0u};
    if (gi) in.instance = core::GpuPlace{0, gi};
    std::vector<pid_t> out;
    for (const auto& f : doctor::diagnose(in))
      if (f.code == doctor::FindingCode::NoSuchProcess) out.push_back(f.pids.front());
    std::sort(out.begin(), out.end());
    return out;
  };
  EXPECT_EQ(pids_of(std::nullopt), (std::vector<pid_t>{4242, 5252}));
  EXPECT_EQ(pids_of(3u), std::vector<pid_t>{4242});
  EXPECT_EQ(pids_of(5u), std::vector<pid_t>{5252});
}

TEST(MigResetGuard, AResetSaysItEndsEveryInstancesWorkAndWhose) {
  auto s = mig_scene();
  s.drivers.gpus[0].instances[0].profile = "3g.40gb";
  EXPECT_EQ(doctor::split_reset_lines(s, 0),
            (std::vector<std::string>{
                "GPU 0 is split into MIG instances: a reset ends the work on every instance:",
                "  0/3 (MIG 3g.40gb): root's PID 4250 (p4250)",
                "  0/5 (MIG 1g.10gb): root's PID 5260 (p5260), root's PID 6000 (p6000)"}));
  EXPECT_EQ(doctor::split_reset_note(s, 0),
            "GPU 0 is split into MIG instances: a reset ends the work on every instance: 0/3 (MIG "
            "3g.40gb: "
            "root's PID 4250 (p4250)), 0/5 (MIG 1g.10gb: root's PID 5260 (p5260), root's PID 6000 "
            "(p6000))");
  auto blockers = doctor::reset_blockers(s, 0);
  ASSERT_TRUE(blockers);
  EXPECT_EQ(
      doctor::reset_refusal(s, 0, *blockers),
      (std::vector<std::string>{
          "refusing to reset GPU 0: these processes use it, and a reset would end them:",
          "  on 0/3 (MIG 3g.40gb):", "    PID 4250 (p4250): holds /dev/nvidia0 on fd 5",
          "  on 0/5 (MIG 1g.10gb):", "    PID 5260 (p5260): holds /dev/nvidia0 on fd 5",
          "    PID 6000 (p6000): listed by the driver with 6.0 GiB; holds /dev/nvidia0 on fd 5",
          "  end them first: gpureap kill 4250 5260 6000"}));
  // Not split: none of it.
  auto plain = make_snapshot({proc(1, 0, 1)}, {gpu(0, 0, 0, {})});
  EXPECT_TRUE(doctor::split_reset_lines(plain, 0).empty());
  EXPECT_FALSE(doctor::split_reset_note(plain, 0));
}

}  // namespace
}  // namespace gpureap::testing

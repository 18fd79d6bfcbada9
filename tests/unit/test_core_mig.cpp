// MIG instances in the model: the N/G notation and --gpu's parser, a holder placed in the instance
// whose capability files it holds, and whole kill plans narrowed to one GPU instance.
#include <gtest/gtest.h>
#include <sys/sysmacros.h>

#include "core/mig.h"
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
  g.mig_mode = true;
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
  auto uuid = core::parse_gpu_ref("MIG-0c7ebb6a-1111");
  ASSERT_TRUE(uuid);
  EXPECT_EQ(uuid->uuid, "MIG-0c7ebb6a-1111");
  for (const char* bad : {"", "/", "0/", "/3", "a", "0/x", "0/3/1", "-1", "1 ", "MIG-", "0x1"})
    EXPECT_FALSE(core::parse_gpu_ref(bad)) << bad;
}

TEST(CoreMig, ResolvesAgainstTheSnapshotsInstances) {
  const auto s = mig_scene();
  auto by_uuid = core::resolve_gpu_ref(s, {std::nullopt, std::nullopt, "MIG-5"});
  ASSERT_TRUE(by_uuid.place) << by_uuid.why;
  EXPECT_EQ(by_uuid.place->index, 0u);
  EXPECT_EQ(by_uuid.place->gpu_instance, 5u);
  auto missing = core::resolve_gpu_ref(s, {0u, 4u, std::nullopt});
  EXPECT_FALSE(missing.place);
  EXPECT_EQ(missing.why, "GPU 0 has no GPU instance 4 (its instances: 3, 5, written 0/3)");
  EXPECT_FALSE(core::resolve_gpu_ref(s, {std::nullopt, std::nullopt, "MIG-9"}).place);
  auto whole = core::resolve_gpu_ref(s, {0u, std::nullopt, std::nullopt});
  ASSERT_TRUE(whole.place);
  EXPECT_FALSE(whole.place->gpu_instance);
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
  EXPECT_EQ(planned(s, {.gpu = 0, .ghosts = true, .gpu_instance = 3}), std::vector<pid_t>{4250});
  EXPECT_EQ(planned(s, {.gpu = 0, .ghosts = true, .gpu_instance = 5}), std::vector<pid_t>{5260});
  // Alone: what is listed in GI 5 (the gone PID through its keeper) and its files' holders.
  EXPECT_EQ(planned(s, {.gpu = 0, .gpu_instance = 5}), (std::vector<pid_t>{5260, 6000}));
  EXPECT_EQ(planned(s, {.pids = {6000}, .gpu = 0, .gpu_instance = 3}), std::vector<pid_t>{});
}

}  // namespace
}  // namespace gpureap::testing

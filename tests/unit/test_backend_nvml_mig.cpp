// The NVML backend's MIG reading against the test double: MIG devices under their GPU (sparse
// slots, names, UUIDs, memory), process records placed in their instance, and the per-instance
// lists read when the GPU's aggregate lists are refused.
#include <unistd.h>

#include "backend/nvml/mig_devices.h"
#include "fake_nvml_fixture.h"

namespace gpureap::testing {
namespace {

using nlohmann::json;

class nvmlFakeMig : public FakeNvmlFixture {};

json mig_gpu(pid_t on_gi3, pid_t on_gi5) {
  return {{"name", "NVIDIA H100 80GB HBM3"},
          {"total_bytes", 80 * kGiB},
          {"mig_mode", true},
          {"max_mig_devices", 7},
          {"mig_devices",
           {{{"slot", 0},
             {"gpu_instance_id", 3},
             {"compute_instance_id", 0},
             {"profile", "3g.40gb"},
             {"uuid", "MIG-aaaaaaaa-0000-0000-0000-000000000003"},
             {"total_bytes", 40 * kGiB}},
            {{"slot", 4},
             {"gpu_instance_id", 5},
             {"compute_instance_id", 0},
             {"profile", "1g.10gb"},
             {"uuid", "MIG-aaaaaaaa-0000-0000-0000-000000000005"},
             {"total_bytes", 10 * kGiB}}}},
          {"processes",
           {{{"pid", on_gi3},
             {"used_bytes", 6 * kGiB},
             {"gpu_instance_id", 3},
             {"compute_instance_id", 0}},
            {{"pid", on_gi5},
             {"used_bytes", 2 * kGiB},
             {"gpu_instance_id", 5},
             {"compute_instance_id", 0}}}}};
}

TEST_F(nvmlFakeMig, InstancesAreReadInSlotOrderWithTheirMemory) {
  const pid_t a = spawn_sleeper(), b = spawn_sleeper();
  write_scenario({{"gpus", {mig_gpu(a, b)}}});
  const auto report = collect();
  ASSERT_TRUE(report.available) << report.error.value_or("");
  ASSERT_EQ(report.gpus.size(), 1u);
  const core::Gpu& gpu = report.gpus[0];
  EXPECT_EQ(gpu.split_mode, true);
  ASSERT_EQ(gpu.instances.size(), 2u);
  EXPECT_EQ(gpu.instances[0].gpu_instance_id, 3u);
  EXPECT_EQ(gpu.instances[0].compute_instance_id, 0u);
  EXPECT_EQ(gpu.instances[0].profile, "3g.40gb");
  EXPECT_EQ(gpu.instances[0].uuid, "MIG-aaaaaaaa-0000-0000-0000-000000000003");
  EXPECT_EQ(gpu.instances[0].memory.total_bytes, 40 * kGiB);
  EXPECT_EQ(gpu.instances[0].memory.used_bytes, 6 * kGiB);
  EXPECT_EQ(gpu.instances[1].gpu_instance_id, 5u);
  EXPECT_EQ(gpu.instances[1].profile, "1g.10gb");
  EXPECT_EQ(gpu.instances[1].memory.used_bytes, 2 * kGiB);
  ASSERT_EQ(gpu.processes.size(), 2u);
  for (const auto& p : gpu.processes) {
    EXPECT_EQ(p.gpu_instance_id, p.pid == a ? 3u : 5u);
    EXPECT_EQ(p.compute_instance_id, 0u);
  }
  EXPECT_FALSE(gpu.processes_error.has_value());
}

TEST_F(nvmlFakeMig, AGpuOutOfMigModeHasNoInstances) {
  const pid_t a = spawn_sleeper(), b = spawn_sleeper();
  json gpu = mig_gpu(a, b);
  gpu["mig_mode"] = false;
  write_scenario({{"gpus", {gpu}}});
  const auto report = collect();
  ASSERT_EQ(report.gpus.size(), 1u);
  EXPECT_EQ(report.gpus[0].split_mode, false);
  EXPECT_TRUE(report.gpus[0].instances.empty());
}

TEST_F(nvmlFakeMig, RefusedAggregateListsAreReadPerInstanceWithTheHandlesIds) {
  const pid_t a = spawn_sleeper(), b = spawn_sleeper();
  json gpu = mig_gpu(a, b);
  gpu["aggregate_processes_error"] = "no_permission";
  gpu["processes"][0]["hide_instance_ids"] = true;
  write_scenario({{"gpus", {gpu}}});
  const auto report = collect();
  ASSERT_EQ(report.gpus.size(), 1u);
  const core::Gpu& g = report.gpus[0];
  EXPECT_FALSE(g.processes_error.has_value()) << g.processes_error.value_or("");
  ASSERT_EQ(g.processes.size(), 2u);
  for (const auto& p : g.processes) {
    SCOPED_TRACE(p.pid);
    EXPECT_EQ(p.gpu_instance_id, p.pid == a ? 3u : 5u);
    EXPECT_EQ(p.compute_instance_id, 0u);
    EXPECT_EQ(p.used_bytes, p.pid == a ? 6 * kGiB : 2 * kGiB);
  }
}

TEST_F(nvmlFakeMig, RefusedListsOfAGpuWithoutMigStayAnError) {
  const pid_t a = spawn_sleeper(), b = spawn_sleeper();
  json gpu = mig_gpu(a, b);
  gpu["mig_mode"] = false;
  gpu["aggregate_processes_error"] = "no_permission";
  write_scenario({{"gpus", {gpu}}});
  const auto report = collect();
  ASSERT_EQ(report.gpus.size(), 1u);
  EXPECT_TRUE(report.gpus[0].processes.empty());
  ASSERT_TRUE(report.gpus[0].processes_error.has_value());
  EXPECT_NE(report.gpus[0].processes_error->find("NO_PERMISSION"), std::string::npos)
      << *report.gpus[0].processes_error;
}

TEST(nvmlMigProfile, IsThePartAfterMig) {
  using backend::nvml::mig_profile;
  EXPECT_EQ(mig_profile("NVIDIA H100 80GB HBM3 MIG 1g.10gb"), "1g.10gb");
  EXPECT_EQ(mig_profile("NVIDIA A100-SXM4-40GB MIG 3g.20gb+me"), "3g.20gb+me");
  EXPECT_EQ(mig_profile("NVIDIA H100 80GB HBM3"), std::nullopt);
  EXPECT_EQ(mig_profile("MIG "), std::nullopt);
}

}  // namespace
}  // namespace gpureap::testing

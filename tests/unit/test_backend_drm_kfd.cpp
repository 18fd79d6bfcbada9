// read_kfd (src/backend/drm/kfd.cpp) over KFD sysfs trees built in a temporary directory.
#include <gtest/gtest.h>
#include <sys/sysmacros.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "backend/drm/kfd.h"
#include "sys_tree.h"

namespace {

using gpureap::backend::drm::KfdReading;
using gpureap::backend::drm::read_kfd;
using gpureap::test::SysTree;

using Vram = std::vector<std::pair<unsigned, uint64_t>>;

// A node's properties as the kernel prints them, trimmed to a few keys around the two read.
std::string properties(unsigned location_id, std::optional<unsigned> domain) {
  std::string text =
      "cpu_cores_count 0\nsimd_count 120\nvendor_id 4098\ndevice_id 29631\n"
      "location_id " +
      std::to_string(location_id) + "\ndrm_render_minor 128\n";
  if (domain) text += "domain " + std::to_string(*domain) + "\n";
  return text + "num_xcc 1\n";
}

// /sys/class/kfd/kfd links to devices/virtual/kfd/kfd, as on a real system. Node 0 is the
// CPU; nodes 1 and 2 are GPUs whose gpu_ids sort the other way round.
std::string make_kfd(const SysTree& sys) {
  const std::string kfd = "devices/virtual/kfd/kfd";
  sys.symlink("../../devices/virtual/kfd/kfd", "class/kfd/kfd");
  sys.write(kfd + "/dev", "510:0\n");
  sys.write(kfd + "/topology/generation_id", "1\n");
  sys.write(kfd + "/topology/nodes/0/gpu_id", "0\n");
  sys.write(kfd + "/topology/nodes/0/properties", "cpu_cores_count 16\nsimd_count 0\n");
  sys.write(kfd + "/topology/nodes/1/gpu_id", "53895\n");
  sys.write(kfd + "/topology/nodes/1/properties", properties(768, 0));  // 03:00.0
  sys.write(kfd + "/topology/nodes/2/gpu_id", "1234\n");
  // Bus 0xc1, device 1, function 1, in PCI domain 1.
  sys.write(kfd + "/topology/nodes/2/properties", properties(0xc109, 1));
  sys.write(kfd + "/proc/4242/pasid", "32770\n");
  sys.write(kfd + "/proc/4242/vram_53895", "1073741824\n");
  sys.write(kfd + "/proc/4242/vram_1234", "0\n");
  sys.write(kfd + "/proc/4242/sdma_53895", "0\n");
  sys.write(kfd + "/proc/4242/stats_53895/evicted_ms", "0\n");
  sys.write(kfd + "/proc/4242/queues/1/size", "1048576\n");
  sys.write(kfd + "/proc/977/pasid", "32771\n");
  sys.write(kfd + "/proc/977/vram_1234", "268435456\n");
  return kfd;
}

TEST(Kfd, GpuNodesAndProcessesWithTheirVram) {
  SysTree sys;
  make_kfd(sys);
  KfdReading r = read_kfd(sys.root());
  ASSERT_TRUE(r.present);
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
  EXPECT_EQ(r.device, makedev(510, 0));
  ASSERT_EQ(r.nodes.size(), 2u);
  EXPECT_EQ(r.nodes[0].gpu_id, 1234u);
  EXPECT_EQ(r.nodes[0].pci_address, "0001:c1:01.1");
  EXPECT_EQ(r.nodes[1].gpu_id, 53895u);
  EXPECT_EQ(r.nodes[1].pci_address, "0000:03:00.0");
  ASSERT_EQ(r.processes.size(), 2u);
  EXPECT_EQ(r.processes[0].pid, 977);
  EXPECT_EQ(r.processes[0].vram, (Vram{{1234, 268435456}}));
  EXPECT_EQ(r.processes[1].pid, 4242);
  EXPECT_EQ(r.processes[1].vram, (Vram{{1234, 0}, {53895, 1073741824}}));
}

TEST(Kfd, MissingKfdIsNotPresent) {
  KfdReading missing = read_kfd("/nonexistent/gpureap-sys");
  EXPECT_FALSE(missing.present);
  EXPECT_FALSE(missing.device);
  EXPECT_TRUE(missing.nodes.empty());
  EXPECT_TRUE(missing.processes.empty());
  EXPECT_TRUE(missing.warnings.empty());

  SysTree sys;  // amdgpu without its compute side: class/drm but no class/kfd
  sys.mkdir("class/drm");
  KfdReading none = read_kfd(sys.root());
  EXPECT_FALSE(none.present);
  EXPECT_TRUE(none.warnings.empty());
}

// KFD up, no process using it: no proc/ entries (plain directories, as a fixture has them).
TEST(Kfd, IdleKfdHasNodesAndNoProcesses) {
  SysTree sys;
  sys.write("class/kfd/kfd/dev", "510:0\n");
  sys.write("class/kfd/kfd/topology/nodes/0/gpu_id", "7\n");
  sys.write("class/kfd/kfd/topology/nodes/0/properties", properties(0x2300, 0));
  sys.mkdir("class/kfd/kfd/proc");
  KfdReading r = read_kfd(sys.root());
  EXPECT_TRUE(r.present);
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
  ASSERT_EQ(r.nodes.size(), 1u);
  EXPECT_EQ(r.nodes[0].gpu_id, 7u);
  EXPECT_EQ(r.nodes[0].pci_address, "0000:23:00.0");
  EXPECT_TRUE(r.processes.empty());
}

TEST(Kfd, GarbageVramIsSkippedWithAWarning) {
  SysTree sys;
  std::string kfd = make_kfd(sys);
  sys.write(kfd + "/proc/4242/vram_53895", "n/a\n");
  KfdReading r = read_kfd(sys.root());
  ASSERT_EQ(r.processes.size(), 2u);
  EXPECT_EQ(r.processes[1].pid, 4242);
  EXPECT_EQ(r.processes[1].vram, (Vram{{1234, 0}}));
  EXPECT_EQ(r.warnings, (std::vector<std::string>{sys.path("class/kfd/kfd/proc/4242/vram_53895") +
                                                  ": not a decimal number: \"n/a\""}));
}

// The context is what holds the GPU: a process stays listed though its VRAM is unknown.
TEST(Kfd, ProcessWithoutReadableVramIsStillListed) {
  SysTree sys;
  std::string kfd = make_kfd(sys);
  sys.write(kfd + "/proc/977/vram_1234", "\n");
  sys.write(kfd + "/proc/31337/pasid", "32772\n");
  KfdReading r = read_kfd(sys.root());
  ASSERT_EQ(r.processes.size(), 3u);
  EXPECT_EQ(r.processes[0].pid, 977);
  EXPECT_TRUE(r.processes[0].vram.empty());
  EXPECT_EQ(r.processes[2].pid, 31337);
  EXPECT_TRUE(r.processes[2].vram.empty());
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_EQ(r.warnings[0],
            sys.path("class/kfd/kfd/proc/977/vram_1234") + ": not a decimal number: \"\"");
}

// Kernels without the domain property: domain 0. No location_id: no address, and a warning.
TEST(Kfd, NodeAddressWithoutDomainOrLocation) {
  SysTree sys;
  std::string kfd = make_kfd(sys);
  sys.write(kfd + "/topology/nodes/1/properties", properties(768, std::nullopt));
  sys.write(kfd + "/topology/nodes/2/properties", "simd_count 120\nlocation_id x\n");
  sys.write(kfd + "/dev", "kfd\n");
  KfdReading r = read_kfd(sys.root());
  EXPECT_FALSE(r.device);
  ASSERT_EQ(r.nodes.size(), 2u);
  EXPECT_EQ(r.nodes[0].gpu_id, 1234u);
  EXPECT_FALSE(r.nodes[0].pci_address);
  EXPECT_EQ(r.nodes[1].pci_address, "0000:03:00.0");
  const std::string nodes = sys.path("class/kfd/kfd/topology/nodes");
  EXPECT_EQ(r.warnings,
            (std::vector<std::string>{
                sys.path("class/kfd/kfd/dev") + ": not a device number (MAJOR:MINOR): \"kfd\"",
                nodes + "/2/properties: location_id is not a PCI location"}));
}

TEST(Kfd, GarbageGpuIdSkipsTheNode) {
  SysTree sys;
  std::string kfd = make_kfd(sys);
  sys.write(kfd + "/topology/nodes/2/gpu_id", "gpu\n");
  KfdReading r = read_kfd(sys.root());
  ASSERT_EQ(r.nodes.size(), 1u);
  EXPECT_EQ(r.nodes[0].gpu_id, 53895u);
  EXPECT_EQ(r.warnings,
            (std::vector<std::string>{sys.path("class/kfd/kfd/topology/nodes/2/gpu_id") +
                                      ": not a decimal number: \"gpu\""}));
}

}  // namespace

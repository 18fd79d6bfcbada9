// attach_drm_nodes (src/backend/nvml/drm_nodes.cpp): an NVIDIA GPU's DRM nodes, as nvidia-drm
// makes them and sysfs shows them, joined to the GPU NVML reports by its PCI bus id.
#include <gtest/gtest.h>
#include <sys/sysmacros.h>

#include <string>
#include <vector>

#include "backend/nvml/drm_nodes.h"
#include "sys_tree.h"

namespace {
namespace nvml_drm_nodes {

using gpureap::backend::nvml::attach_drm_nodes;
using gpureap::core::Gpu;
using gpureap::test::add_pci_gpu;
using gpureap::test::Layout;
using gpureap::test::PciGpu;
using gpureap::test::SysTree;

// A discrete NVIDIA GPU bound to nvidia (nvidia-drm's nodes hang on its PCI function), behind
// its root port, as the kernel lays it out.
PciGpu nvidia(const std::string& address, unsigned card, unsigned render) {
  return PciGpu{.address = address,
                .driver = "nvidia",
                .vendor = "0x10de",
                .device = "0x2335",
                .nodes = {{"card" + std::to_string(card), card},
                          {"renderD" + std::to_string(render), render}},
                .bridge = "0000:00:01.0",
                .pci_class = "0x030200"};
}

// What NVML says of a GPU: its bus id in NVML's form, and /dev/nvidia<minor>.
Gpu nvml_gpu(const std::string& bus_id, unsigned minor) {
  Gpu g;
  g.pci_bus_id = bus_id;
  g.minor = minor;
  g.device_numbers = {makedev(195, minor)};
  return g;
}

std::vector<dev_t> numbers(std::vector<std::pair<unsigned, unsigned>> pairs) {
  std::vector<dev_t> out;
  for (auto [major, minor] : pairs) out.push_back(makedev(major, minor));
  return out;
}

TEST(NvmlDrmNodes, EachGpuGetsTheNodesOfItsOwnPciFunction) {
  SysTree sys;
  add_pci_gpu(sys, nvidia("0000:17:00.0", 1, 128), Layout::Symlinks);
  add_pci_gpu(sys, nvidia("0000:b3:00.0", 2, 129), Layout::Symlinks);
  std::vector<Gpu> gpus{nvml_gpu("00000000:17:00.0", 0), nvml_gpu("00000000:B3:00.0", 1)};
  attach_drm_nodes(gpus, sys.root());
  EXPECT_EQ(gpus[0].device_numbers, numbers({{195, 0}, {226, 1}, {226, 128}}));
  EXPECT_EQ(gpus[0].display_device_numbers, numbers({{226, 1}, {226, 128}}));
  EXPECT_EQ(gpus[1].device_numbers, numbers({{195, 1}, {226, 2}, {226, 129}}));
  EXPECT_EQ(gpus[1].display_device_numbers, numbers({{226, 2}, {226, 129}}));
  // Read again (the daemon collects every few seconds): nothing is added twice.
  attach_drm_nodes(gpus, sys.root());
  EXPECT_EQ(gpus[0].device_numbers, numbers({{195, 0}, {226, 1}, {226, 128}}));
}

TEST(NvmlDrmNodes, OtherDevicesNodesAreLeftAlone) {
  SysTree sys;
  // An Intel iGPU, an AMD GPU, and a device at the GPU's address but another function.
  add_pci_gpu(sys,
              PciGpu{.address = "0000:00:02.0",
                     .driver = "i915",
                     .vendor = "0x8086",
                     .device = "0x9a49",
                     .nodes = {{"card0", 0}, {"renderD128", 128}}},
              Layout::Symlinks);
  add_pci_gpu(sys,
              PciGpu{.address = "0000:17:00.0",
                     .driver = "amdgpu",
                     .vendor = "0x1002",
                     .device = "0x73bf",
                     .nodes = {{"card1", 1}, {"renderD129", 129}}},
              Layout::Symlinks);
  add_pci_gpu(sys, nvidia("0000:65:00.1", 2, 130), Layout::Symlinks);
  std::vector<Gpu> gpus{nvml_gpu("00000000:17:00.0", 0), nvml_gpu("00000000:65:00.0", 1)};
  attach_drm_nodes(gpus, sys.root());
  EXPECT_EQ(gpus[0].device_numbers, numbers({{195, 0}}));
  EXPECT_EQ(gpus[1].device_numbers, numbers({{195, 1}}));
  EXPECT_TRUE(gpus[0].display_device_numbers.empty());
  EXPECT_TRUE(gpus[1].display_device_numbers.empty());
}

// Without its minor, any /dev/nvidia<N> may reach the GPU (Gpu::device_major): a list of DRM
// numbers would stop them from reaching it.
TEST(NvmlDrmNodes, AGpuWhoseOwnNodeIsUnknownGetsNone) {
  SysTree sys;
  add_pci_gpu(sys, nvidia("0000:17:00.0", 1, 128), Layout::Symlinks);
  Gpu g;
  g.pci_bus_id = "00000000:17:00.0";
  g.device_major = 195;
  std::vector<Gpu> gpus{g};
  attach_drm_nodes(gpus, sys.root());
  EXPECT_TRUE(gpus[0].device_numbers.empty());
  EXPECT_TRUE(gpus[0].display_device_numbers.empty());
}

TEST(NvmlDrmNodes, NoDrmClassMeansNoNodes) {
  SysTree sys;
  std::vector<Gpu> gpus{nvml_gpu("00000000:17:00.0", 0)};
  attach_drm_nodes(gpus, sys.root());
  EXPECT_EQ(gpus[0].device_numbers, numbers({{195, 0}}));
}

}  // namespace nvml_drm_nodes
}  // namespace

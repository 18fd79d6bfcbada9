// read_drm_devices (src/backend/drm/sysfs_devices.cpp) over sysfs trees built in a temporary
// directory: the real layout of links and the plain-directory layout of fixture trees.
#include <gtest/gtest.h>
#include <sys/sysmacros.h>

#include <string>
#include <vector>

#include "backend/drm/sysfs_devices.h"
#include "sys_tree.h"

namespace {

using gpureap::backend::drm::DrmDevice;
using gpureap::backend::drm::read_drm_devices;
using gpureap::test::add_pci_gpu;
using gpureap::test::Layout;
using gpureap::test::PciGpu;
using gpureap::test::SysTree;

// An RX 6800 with every figure amdgpu publishes, hwmon included.
PciGpu amd_rx6800(const std::string& address, unsigned card, unsigned render) {
  return PciGpu{
      .address = address,
      .driver = "amdgpu",
      .vendor = "0x1002",
      .device = "0x73bf",
      .nodes = {{"card" + std::to_string(card), card},
                {"renderD" + std::to_string(render), render}},
      .files = {{"mem_info_vram_total", "17163091968\n"},
                {"mem_info_vram_used", "1340280832\n"},
                {"gpu_busy_percent", "37\n"},
                {"product_name", "AMD Radeon RX 6800\n"},
                {"hwmon/hwmon3/name", "amdgpu\n"},
                {"hwmon/hwmon3/temp1_input", "61500\n"},
                {"hwmon/hwmon3/power1_average", "35250000\n"},
                {"hwmon/hwmon3/power1_input", "40000000\n"}},
  };
}

PciGpu intel_iris_xe() {
  return PciGpu{.address = "0000:00:02.0",
                .driver = "i915",
                .vendor = "0x8086",
                .device = "0x9a49",
                .nodes = {{"card1", 1}, {"renderD129", 129}}};
}

std::vector<dev_t> drm_numbers(std::vector<unsigned> minors) {
  std::vector<dev_t> out;
  for (unsigned m : minors) out.push_back(makedev(226, m));
  return out;
}

void expect_no_figures(const DrmDevice& d) {
  EXPECT_FALSE(d.name);
  EXPECT_FALSE(d.memory_total_bytes);
  EXPECT_FALSE(d.memory_used_bytes);
  EXPECT_FALSE(d.busy_percent);
  EXPECT_FALSE(d.temperature_celsius);
  EXPECT_FALSE(d.power_watts);
}

TEST(DrmSysfs, AmdgpuDgpuInTheRealLinkLayout) {
  SysTree sys;
  std::string dev = add_pci_gpu(sys, amd_rx6800("0000:03:00.0", 0, 128), Layout::Symlinks);
  auto r = read_drm_devices(sys.root());
  ASSERT_TRUE(r.present);
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
  ASSERT_EQ(r.devices.size(), 1u);
  const DrmDevice& d = r.devices[0];
  EXPECT_EQ(d.pci_address, "0000:03:00.0");
  EXPECT_EQ(d.driver, "amdgpu");
  EXPECT_EQ(d.pci_vendor, 0x1002u);
  EXPECT_EQ(d.pci_device, 0x73bfu);
  EXPECT_EQ(d.vendor, "amd");
  EXPECT_EQ(d.name, "AMD Radeon RX 6800");
  EXPECT_EQ(d.card_minor, 0u);
  EXPECT_EQ(d.render_minor, 128u);
  EXPECT_EQ(d.device_numbers, drm_numbers({0, 128}));
  EXPECT_EQ(d.memory_total_bytes, 17163091968u);
  EXPECT_EQ(d.memory_used_bytes, 1340280832u);
  EXPECT_EQ(d.busy_percent, 37u);
  EXPECT_EQ(d.temperature_celsius, 61u);  // whole degrees, truncated
  EXPECT_EQ(d.power_watts, 35.25);        // power1_average wins over power1_input
}

TEST(DrmSysfs, IntelI915IgpuHasIdsAndNoFigures) {
  SysTree sys;
  add_pci_gpu(sys, intel_iris_xe(), Layout::PlainDirs);
  auto r = read_drm_devices(sys.root());
  ASSERT_TRUE(r.present);
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
  ASSERT_EQ(r.devices.size(), 1u);
  const DrmDevice& d = r.devices[0];
  EXPECT_EQ(d.pci_address, "0000:00:02.0");
  EXPECT_EQ(d.driver, "i915");
  EXPECT_EQ(d.pci_vendor, 0x8086u);
  EXPECT_EQ(d.pci_device, 0x9a49u);
  EXPECT_EQ(d.vendor, "intel");
  EXPECT_EQ(d.card_minor, 1u);
  EXPECT_EQ(d.render_minor, 129u);
  EXPECT_EQ(d.device_numbers, drm_numbers({1, 129}));
  expect_no_figures(d);
}

// The kernel puts the size in tile<N>/; a vram0/ directory under the tile is read as well.
TEST(DrmSysfs, XeVramIsTheSumOfItsTiles) {
  for (Layout layout : {Layout::Symlinks, Layout::PlainDirs}) {
    SysTree sys;
    PciGpu xe{.address = "0000:4d:00.0",
              .driver = "xe",
              .vendor = "0x8086",
              .device = "0x56a0",
              .nodes = {{"card0", 0}, {"renderD128", 128}},
              .files = {{"tile0/physical_vram_size_bytes", "17179869184\n"},
                        {"tile1/vram0/physical_vram_size_bytes", "8589934592\n"},
                        {"tile1/memory/freq0/min_freq", "100\n"},
                        {"hwmon/hwmon2/power1_max", "225000000\n"}}};
    add_pci_gpu(sys, xe, layout);
    auto r = read_drm_devices(sys.root());
    EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
    ASSERT_EQ(r.devices.size(), 1u);
    const DrmDevice& d = r.devices[0];
    EXPECT_EQ(d.driver, "xe");
    EXPECT_EQ(d.vendor, "intel");
    EXPECT_EQ(d.memory_total_bytes, 17179869184u + 8589934592u);
    EXPECT_FALSE(d.memory_used_bytes);
    EXPECT_FALSE(d.busy_percent);
    EXPECT_FALSE(d.temperature_celsius);
    EXPECT_FALSE(d.power_watts);  // power1_max is a limit, not a reading
  }
}

TEST(DrmSysfs, ConnectorsVersionAndVirtualDevicesAreSkipped) {
  SysTree sys;
  add_pci_gpu(sys, amd_rx6800("0000:03:00.0", 0, 128), Layout::PlainDirs);
  // A connector that, read as a node, would add a device number to the GPU.
  sys.write("class/drm/card0-DP-1/status", "connected\n");
  sys.write("class/drm/card0-DP-1/dev", "226:99\n");
  sys.write("class/drm/card0-DP-1/device/uevent", "PCI_SLOT_NAME=0000:03:00.0\n");
  sys.write("class/drm/version", "drm 1.1.0 20060810\n");
  sys.write("class/drm/controlD64/dev", "226:64\n");
  // simpledrm in a fixture tree: no device at all.
  sys.write("class/drm/card1/dev", "226:1\n");
  // vkms as the kernel has it: a platform device, not a PCI one.
  sys.write("devices/platform/vkms/uevent", "DRIVER=vkms\n");
  sys.write("devices/platform/vkms/drm/card2/dev", "226:2\n");
  sys.symlink("../../../vkms", "devices/platform/vkms/drm/card2/device");
  sys.symlink("../../devices/platform/vkms/drm/card2", "class/drm/card2");

  auto r = read_drm_devices(sys.root());
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
  ASSERT_EQ(r.devices.size(), 1u);
  EXPECT_EQ(r.devices[0].pci_address, "0000:03:00.0");
  EXPECT_EQ(r.devices[0].card_minor, 0u);
  EXPECT_EQ(r.devices[0].device_numbers, drm_numbers({0, 128}));
}

TEST(DrmSysfs, TwoAmdGpusAreListedByPciAddress) {
  SysTree sys;
  PciGpu second = amd_rx6800("0000:0c:00.0", 0, 128);
  second.files["mem_info_vram_used"] = "4096\n";
  second.files["gpu_busy_percent"] = "100\n";
  second.files["product_name"] = "AMD Radeon RX 7900 XTX\n";
  add_pci_gpu(sys, second, Layout::Symlinks);
  add_pci_gpu(sys, amd_rx6800("0000:03:00.0", 1, 129), Layout::Symlinks);

  auto r = read_drm_devices(sys.root());
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
  ASSERT_EQ(r.devices.size(), 2u);
  EXPECT_EQ(r.devices[0].pci_address, "0000:03:00.0");
  EXPECT_EQ(r.devices[0].card_minor, 1u);
  EXPECT_EQ(r.devices[0].render_minor, 129u);
  EXPECT_EQ(r.devices[0].device_numbers, drm_numbers({1, 129}));
  EXPECT_EQ(r.devices[0].memory_used_bytes, 1340280832u);
  EXPECT_EQ(r.devices[0].busy_percent, 37u);
  EXPECT_EQ(r.devices[0].name, "AMD Radeon RX 6800");
  EXPECT_EQ(r.devices[1].pci_address, "0000:0c:00.0");
  EXPECT_EQ(r.devices[1].card_minor, 0u);
  EXPECT_EQ(r.devices[1].render_minor, 128u);
  EXPECT_EQ(r.devices[1].device_numbers, drm_numbers({0, 128}));
  EXPECT_EQ(r.devices[1].memory_used_bytes, 4096u);
  EXPECT_EQ(r.devices[1].busy_percent, 100u);
  EXPECT_EQ(r.devices[1].name, "AMD Radeon RX 7900 XTX");
}

TEST(DrmSysfs, AmdAndIntelTogether) {
  SysTree sys;
  add_pci_gpu(sys, amd_rx6800("0000:03:00.0", 0, 128), Layout::Symlinks);
  add_pci_gpu(sys, intel_iris_xe(), Layout::Symlinks);
  auto r = read_drm_devices(sys.root());
  ASSERT_EQ(r.devices.size(), 2u);
  EXPECT_EQ(r.devices[0].pci_address, "0000:00:02.0");
  EXPECT_EQ(r.devices[0].vendor, "intel");
  expect_no_figures(r.devices[0]);
  EXPECT_EQ(r.devices[1].pci_address, "0000:03:00.0");
  EXPECT_EQ(r.devices[1].memory_total_bytes, 17163091968u);
}

TEST(DrmSysfs, MissingSysRootIsNotPresent) {
  auto r = read_drm_devices("/nonexistent/gpureap-sys");
  EXPECT_FALSE(r.present);
  EXPECT_TRUE(r.devices.empty());
  EXPECT_TRUE(r.warnings.empty());

  SysTree sys;  // a sys root without class/drm: no DRM driver loaded
  sys.mkdir("class/net");
  auto empty = read_drm_devices(sys.root());
  EXPECT_FALSE(empty.present);
  EXPECT_TRUE(empty.devices.empty());
  EXPECT_TRUE(empty.warnings.empty());
}

TEST(DrmSysfs, EmptyClassDrmIsPresentWithNoDevices) {
  SysTree sys;
  sys.write("class/drm/version", "drm 1.1.0 20060810\n");
  auto r = read_drm_devices(sys.root());
  EXPECT_TRUE(r.present);
  EXPECT_TRUE(r.devices.empty());
  EXPECT_TRUE(r.warnings.empty());
}

TEST(DrmSysfs, GarbageVramUsedLeavesThatFigureEmptyAndWarns) {
  SysTree sys;
  PciGpu gpu = amd_rx6800("0000:03:00.0", 0, 128);
  gpu.files["mem_info_vram_used"] = "lots\n";
  std::string dev = add_pci_gpu(sys, gpu, Layout::PlainDirs);
  auto r = read_drm_devices(sys.root());
  ASSERT_EQ(r.devices.size(), 1u);
  EXPECT_FALSE(r.devices[0].memory_used_bytes);
  EXPECT_EQ(r.devices[0].memory_total_bytes, 17163091968u);
  EXPECT_EQ(r.devices[0].busy_percent, 37u);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_EQ(r.warnings[0], sys.path(dev) + "/mem_info_vram_used: not a decimal number: \"lots\"");
}

TEST(DrmSysfs, UnreadableFileWarnsWithTheReason) {
  SysTree sys;
  PciGpu gpu = amd_rx6800("0000:03:00.0", 0, 128);
  gpu.files.erase("mem_info_vram_total");
  std::string dev = add_pci_gpu(sys, gpu, Layout::Symlinks);
  sys.mkdir(dev + "/mem_info_vram_total");  // exists, but no regular file to read
  auto r = read_drm_devices(sys.root());
  ASSERT_EQ(r.devices.size(), 1u);
  EXPECT_FALSE(r.devices[0].memory_total_bytes);
  EXPECT_EQ(r.devices[0].memory_used_bytes, 1340280832u);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_EQ(
      r.warnings[0].rfind(sys.path("class/drm/card0/device/mem_info_vram_total: cannot read"), 0),
      0u)
      << r.warnings[0];
}

TEST(DrmSysfs, OutOfRangeAndMalformedFiguresWarn) {
  SysTree sys;
  PciGpu gpu = amd_rx6800("0000:03:00.0", 0, 128);
  gpu.files["gpu_busy_percent"] = "250\n";
  gpu.files["hwmon/hwmon3/temp1_input"] = "-5000\n";
  add_pci_gpu(sys, gpu, Layout::PlainDirs);
  sys.write("class/drm/renderD128/dev", "226\n");
  auto r = read_drm_devices(sys.root());
  ASSERT_EQ(r.devices.size(), 1u);
  EXPECT_FALSE(r.devices[0].busy_percent);
  EXPECT_FALSE(r.devices[0].temperature_celsius);
  EXPECT_EQ(r.devices[0].device_numbers, drm_numbers({0}));
  EXPECT_EQ(r.devices[0].render_minor, 128u);  // the node is known by its name
  std::string dev = sys.path("class/drm/card0/device");
  EXPECT_EQ(r.warnings, (std::vector<std::string>{
                            dev + "/gpu_busy_percent: above 100 percent: 250",
                            dev + "/hwmon/hwmon3/temp1_input: not a decimal number: \"-5000\"",
                            sys.path("class/drm/renderD128/dev") +
                                ": not a device number (MAJOR:MINOR): \"226\""}));
}

// Without PCI_SLOT_NAME and DRIVER in uevent, the links say the same.
TEST(DrmSysfs, AddressAndDriverFromTheLinks) {
  SysTree sys;
  PciGpu gpu = amd_rx6800("0000:03:00.0", 0, 128);
  gpu.slot_in_uevent = false;
  gpu.driver_in_uevent = false;
  add_pci_gpu(sys, gpu, Layout::Symlinks);
  auto r = read_drm_devices(sys.root());
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
  ASSERT_EQ(r.devices.size(), 1u);
  EXPECT_EQ(r.devices[0].pci_address, "0000:03:00.0");
  EXPECT_EQ(r.devices[0].driver, "amdgpu");
  EXPECT_EQ(r.devices[0].device_numbers, drm_numbers({0, 128}));
}

// ASPEED's BMC graphics (ast), on most servers: a PCI DRM device of a vendor gpureap has no
// name for, and no figures.
TEST(DrmSysfs, OtherVendorIsNamedByItsPciId) {
  SysTree sys;
  add_pci_gpu(sys,
              PciGpu{.address = "0000:02:00.0",
                     .driver = "ast",
                     .vendor = "0x1a03",
                     .device = "0x2000",
                     .nodes = {{"card0", 0}}},
              Layout::PlainDirs);
  auto r = read_drm_devices(sys.root());
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
  ASSERT_EQ(r.devices.size(), 1u);
  EXPECT_EQ(r.devices[0].vendor, "pci-0x1a03");
  EXPECT_EQ(r.devices[0].pci_device, 0x2000u);
  EXPECT_EQ(r.devices[0].driver, "ast");
  EXPECT_EQ(r.devices[0].card_minor, 0u);
  EXPECT_FALSE(r.devices[0].render_minor);
  expect_no_figures(r.devices[0]);
}

// A board without FRU data in its VBIOS prints an empty product name; newer SMU firmware
// gives power1_input only.
TEST(DrmSysfs, AmdgpuWithEmptyNameAndInstantPowerOnly) {
  SysTree sys;
  PciGpu gpu = amd_rx6800("0000:03:00.0", 0, 128);
  gpu.files["product_name"] = "\n";
  gpu.files.erase("hwmon/hwmon3/power1_average");
  gpu.files["hwmon/hwmon3/power1_input"] = "12000000\n";
  add_pci_gpu(sys, gpu, Layout::PlainDirs);
  auto r = read_drm_devices(sys.root());
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
  ASSERT_EQ(r.devices.size(), 1u);
  EXPECT_FALSE(r.devices[0].name);
  EXPECT_EQ(r.devices[0].power_watts, 12.0);
  EXPECT_EQ(r.devices[0].temperature_celsius, 61u);
}

}  // namespace

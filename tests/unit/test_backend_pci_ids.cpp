// The PCI ID database's format (pci.ids), from a real excerpt of Debian's file
// (tests/fixtures/pci-ids) and from hostile or truncated text.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "backend/drm/pci_ids.h"

namespace gpureap::backend::drm {
namespace {

std::string fixture() {
  std::ifstream in(std::string(GPUREAP_FIXTURES) + "/pci-ids/pci.ids");
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

PciId id(unsigned vendor, unsigned device) {
  return {vendor, device, std::nullopt, std::nullopt};
}
PciId id(unsigned vendor, unsigned device, unsigned sub_vendor, unsigned sub_device) {
  return {vendor, device, sub_vendor, sub_device};
}

TEST(PciIds, TheRealFileNamesDevicesAndBoards) {
  const std::string ids = fixture();
  ASSERT_FALSE(ids.empty());
  auto navi = lookup_pci_name(ids, id(0x1002, 0x73bf, 0x1002, 0x0e3a));
  EXPECT_EQ(navi.device, "Navi 21 [Radeon RX 6800/6800 XT / 6900 XT]");
  EXPECT_EQ(navi.subsystem, "Radeon RX 6900 XT");
  EXPECT_EQ(lookup_pci_name(ids, id(0x1002, 0x73bf, 0x1da2, 0xe437)).subsystem,
            "Pulse Radeon RX 6800");
  // A board the database does not know: the chip's name alone.
  auto unknown_board = lookup_pci_name(ids, id(0x1002, 0x73bf, 0x1234, 0x5678));
  EXPECT_EQ(unknown_board.device, "Navi 21 [Radeon RX 6800/6800 XT / 6900 XT]");
  EXPECT_FALSE(unknown_board.subsystem);
  // No subsystem read from sysfs: the chip.
  EXPECT_FALSE(lookup_pci_name(ids, id(0x1002, 0x73bf)).subsystem);
  EXPECT_EQ(lookup_pci_name(ids, id(0x8086, 0x56a0)).device, "DG2 [Arc A770]");
  EXPECT_EQ(lookup_pci_name(ids, id(0x8086, 0x4680)).device, "AlderLake-S GT1");
  EXPECT_EQ(lookup_pci_name(ids, id(0x10de, 0x2331)).device, "GH100 [H100 PCIe]");
}

TEST(PciIds, ASubsystemBelongsToItsDeviceAndVendorOnly) {
  const std::string ids = fixture();
  // 1002 0e3a is listed under 73bf only; under 73af it names nothing.
  EXPECT_FALSE(lookup_pci_name(ids, id(0x1002, 0x73af, 0x1002, 0x0e3a)).subsystem);
  // 73bf is AMD's id; Intel has no such device.
  EXPECT_FALSE(lookup_pci_name(ids, id(0x8086, 0x73bf)).device);
  // Not in the database at all.
  EXPECT_FALSE(lookup_pci_name(ids, id(0x1af4, 0x1050)).device);
  EXPECT_FALSE(lookup_pci_name(ids, id(0x1002, 0xffff)).device);
}

TEST(PciIds, CommentsBlankLinesAndTheClassesAreNotDevices) {
  const std::string ids =
      "# 1002  Not a vendor\n"
      "\n"
      "1002  Advanced Micro Devices, Inc. [AMD/ATI]\n"
      "# \t73bf  Not a device\n"
      "\t73bf  Navi 21\n"
      "C 03  Display controller\n"
      "\t00  VGA compatible controller\n"
      "8086  Intel Corporation\n"
      "\t56a0  DG2 [Arc A770]\n";
  EXPECT_EQ(lookup_pci_name(ids, id(0x1002, 0x73bf)).device, "Navi 21");
  // After the classes nothing is a vendor, even in the vendors' format.
  EXPECT_FALSE(lookup_pci_name(ids, id(0x8086, 0x56a0)).device);
  EXPECT_FALSE(lookup_pci_name(ids, id(0x0003, 0x0000)).device);
}

TEST(PciIds, NamesAreTrimmedAndCarryNoControlCharacters) {
  const std::string ids =
      "1002  AMD\r\n"
      "\t73bf  Navi\x1b[2J 21 \t \r\n"
      "\t\t1002 0e3a    Radeon\x07 RX 6900 XT   \n";
  auto n = lookup_pci_name(ids, id(0x1002, 0x73bf, 0x1002, 0x0e3a));
  EXPECT_EQ(n.device, "Navi[2J 21");
  EXPECT_EQ(n.subsystem, "Radeon RX 6900 XT");
}

TEST(PciIds, HostileAndTruncatedTextNamesNothingWrong) {
  for (std::string ids : {
           std::string(),
           std::string("1002"),
           std::string("1002  AMD\n\t73b"),
           std::string("1002  AMD\n\t73bf"),        // cut before the name
           std::string("1002  AMD\n\t73bf  "),      // an empty name
           std::string("1002  AMD\n\t73bfNavi\n"),  // no blank after the id
           std::string("1002  AMD\n\tzzzz  Navi\n"),
           std::string("1002  AMD\n\t\t\t73bf  Navi\n"),
           std::string("1002\n\t73bf  Navi\n"),  // a vendor line without a name
           std::string("\t73bf  Navi\n"),        // a device before any vendor
           std::string(1 << 16, '\t'),
           std::string(1 << 16, '\n'),
           std::string("1002  AMD\n\t73bf  ") + std::string(1 << 16, 'x'),
       }) {
    auto n = lookup_pci_name(ids, id(0x1002, 0x73bf, 0x1002, 0x0e3a));
    if (n.device) {
      EXPECT_LE(n.device->size(), 200u);
      EXPECT_EQ(n.device->find_first_of("\t\n\r"), std::string::npos);
    }
    EXPECT_FALSE(n.subsystem);
  }
  // A file cut in the middle of the board's line still names the chip.
  auto cut = lookup_pci_name("1002  AMD\n\t73bf  Navi 21\n\t\t1002 0e",
                             id(0x1002, 0x73bf, 0x1002, 0x0e3a));
  EXPECT_EQ(cut.device, "Navi 21");
  EXPECT_FALSE(cut.subsystem);
  // A long name is cut at 200 bytes, never inside a UTF-8 character.
  std::string long_name;
  for (int i = 0; i < 150; ++i) long_name += "\xc3\xa9";  // é
  auto utf8 = lookup_pci_name("1002  AMD\n\t73bf  " + long_name + "\n", id(0x1002, 0x73bf));
  ASSERT_TRUE(utf8.device);
  EXPECT_EQ(utf8.device->size(), 200u);
  EXPECT_EQ(*utf8.device, long_name.substr(0, 200));
}

TEST(PciIds, TheFileComesFromDebiansPlaceElseHwdatas) {
  char tmpl[] = "/tmp/gpureap-pciids-XXXXXX";
  ASSERT_TRUE(::mkdtemp(tmpl));
  const std::string root = tmpl;
  EXPECT_FALSE(read_pci_ids(root)) << "no database: the caller falls back to the ids";
  std::filesystem::create_directories(root + "/usr/share/hwdata");
  std::ofstream(root + "/usr/share/hwdata/pci.ids") << "1002  AMD\n\t73bf  hwdata's\n";
  auto hw = read_pci_ids(root);
  ASSERT_TRUE(hw);
  EXPECT_EQ(hw->path, root + "/usr/share/hwdata/pci.ids");
  std::filesystem::create_directories(root + "/usr/share/misc");
  std::ofstream(root + "/usr/share/misc/pci.ids") << "1002  AMD\n\t73bf  Debian's\n";
  auto debian = read_pci_ids(root + "/");
  ASSERT_TRUE(debian);
  EXPECT_EQ(debian->path, root + "/usr/share/misc/pci.ids");
  EXPECT_EQ(lookup_pci_name(debian->text, id(0x1002, 0x73bf)).device, "Debian's");
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace gpureap::backend::drm

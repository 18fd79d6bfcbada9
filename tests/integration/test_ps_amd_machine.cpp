// `gpureap ps` on a machine with only an AMD GPU, as the kernel shows it (sysfs, fd links,
// fdinfo) with Debian's PCI ID database: no word about NVIDIA or NVML, which this machine has
// no use for; the GPU's name from the database and the driver's version from the kernel.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>

#include "drm_machine.h"
#include "support.h"

namespace gpureap::testing {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

class PsAmdMachine : public ::testing::Test {
 protected:
  void SetUp() override {
    m_.amd_gpu(0, 128, kAmd, 16 * GiB, 5 * GiB);  // Navi 21 on the RX 6900 XT board
    m_.module_version("amdgpu", "6.2.4");         // AMD's DKMS driver
    m_.pci_ids_fixture(GPUREAP_FIXTURES);
    m_.process(600, "trainer", 1, 600, 600);
    m_.open_fd(600, 5, "dri/renderD128", DrmMachine::amdgpu_fdinfo(kAmd, 17, 4 * 1024 * 1024, 0));
  }
  RunResult ps(std::vector<std::string> extra = {}) const {
    std::vector<std::string> args{
        "ps",          "--no-daemon", "--proc-root", m_.proc_root(),   "--dev-root",
        m_.dev_root(), "--sys-root",  m_.sys_root(), "--nvml-library", kNoNvml};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_gpureap(args, {"COLUMNS=100"});
  }
  DrmMachine m_;
};

TEST_F(PsAmdMachine, NoWordAboutNvidiaARealNameAndTheModulesVersion) {
  auto r = ps();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  for (const auto* text : {&r.out, &r.err}) {
    EXPECT_EQ(lower(*text).find("nvml"), std::string::npos) << r.out << r.err;
    EXPECT_EQ(lower(*text).find("nvidia"), std::string::npos) << r.out << r.err;
  }
  EXPECT_NE(r.out.find("AMD Radeon RX 6900 XT"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("0x73bf"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Driver 6.2.4"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("Driver ?"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("trainer"), std::string::npos) << r.out;
}

TEST_F(PsAmdMachine, TheJsonKeepsWhyThereIsNoNvidiaGpu) {
  auto doc = parse_output(ps({"--json"}));
  const auto& backends = doc["backends"];
  ASSERT_TRUE(backends.is_array()) << doc.dump();
  bool saw_nvml = false;
  for (const auto& b : backends) {
    if (b["name"] != "nvml") continue;
    saw_nvml = true;
    EXPECT_EQ(b["error_code"], "no-device") << b.dump();
    EXPECT_NE(b["error"].get<std::string>().find("no NVIDIA GPU"), std::string::npos) << b.dump();
  }
  EXPECT_TRUE(saw_nvml) << doc.dump();
  EXPECT_EQ(doc["gpus"][0]["name"], "AMD Radeon RX 6900 XT") << doc.dump();
}

TEST_F(PsAmdMachine, WithoutTheDatabaseTheIdsAndStillNoNvidia) {
  m_.remove("usr/share/misc/pci.ids");
  m_.remove("sys/module/amdgpu");
  auto r = ps();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("AMD 0x73bf"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Driver 6.8.0-test"), std::string::npos) << r.out;  // the kernel's
  EXPECT_EQ(lower(r.out + r.err).find("nvidia"), std::string::npos) << r.out << r.err;
}

// An NVIDIA device node is there: NVML's absence is news, and ps says so.
TEST_F(PsAmdMachine, AnNvidiaNodeMakesNvmlsAbsenceNews) {
  m_.write("dev/nvidiactl", "");
  m_.write("dev/nvidia0", "");
  auto r = ps();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("could not be loaded"), std::string::npos) << r.out << r.err;
}

}  // namespace
}  // namespace gpureap::testing

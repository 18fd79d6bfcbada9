// backend::drm::parse_fdinfo (src/backend/drm/fdinfo.cpp): what amdgpu, i915 and xe print in
// /proc/PID/fdinfo/FD, and the garbage a parser of such text must refuse without crashing.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "backend/drm/fdinfo.h"
#include "procfs/file_read.h"

namespace {

using gpureap::backend::drm::DrmClient;
using gpureap::backend::drm::has_usage_stats;
using gpureap::backend::drm::is_device_local;
using gpureap::backend::drm::parse_fdinfo;
using gpureap::backend::drm::RegionMemory;
using namespace std::string_view_literals;

constexpr uint64_t KiB = 1024, MiB = 1024 * 1024;

std::string fdinfo_fixture(const std::string& name) {
  auto f = gpureap::procfs::read_file(std::string(GPUREAP_FIXTURES) + "/drm-fdinfo/" + name);
  EXPECT_TRUE(f.ok()) << "fixture " << name << " unreadable, errno " << f.error;
  return f.data;
}

DrmClient parsed(std::string_view text) {
  auto c = parse_fdinfo(text);
  EXPECT_TRUE(c.ok()) << c.error().message;
  return c.ok() ? *c : DrmClient{};
}

std::string error_of(std::string_view text) {
  auto c = parse_fdinfo(text);
  EXPECT_FALSE(c.ok()) << "parsed, driver " << c->driver;
  return c.ok() ? "" : c.error().message;
}

// The names of the regions (or engines) in order, one string, so a mismatch shows them all.
template <class T>
std::string names(const std::vector<T>& items) {
  std::string out;
  for (const T& i : items) out += (out.empty() ? "" : " ") + i.name;
  return out;
}

const RegionMemory& region(const DrmClient& c, std::string_view name) {
  static const RegionMemory none;
  const RegionMemory* r = c.region(name);
  EXPECT_NE(r, nullptr) << "no region " << name;
  return r ? *r : none;
}

TEST(DrmFdinfo, AmdgpuReadsEveryRegionAndEngine) {
  DrmClient c = parsed(fdinfo_fixture("amdgpu.txt"));
  EXPECT_EQ(c.driver, "amdgpu");
  EXPECT_EQ(c.pdev, "0000:03:00.0");
  EXPECT_EQ(c.client_id, 42u);
  EXPECT_EQ(names(c.regions), "cpu gtt vram");
  const RegionMemory& vram = region(c, "vram");
  EXPECT_EQ(vram.total, 1572868 * KiB);
  EXPECT_EQ(vram.shared, 8 * MiB);
  EXPECT_EQ(vram.resident, 1572868 * KiB);
  EXPECT_EQ(vram.purgeable, 0u);
  EXPECT_EQ(vram.active, std::nullopt);  // amdgpu does not print drm-active-
  EXPECT_EQ(region(c, "gtt").total, 2 * MiB);
  EXPECT_EQ(region(c, "cpu").resident, 0u);
  EXPECT_EQ(names(c.engines), "gfx compute dma");
  EXPECT_EQ(c.engines[0].busy_ns, 1234567u);
  EXPECT_EQ(c.engines[1].busy_ns, 987654321u);
  EXPECT_EQ(c.engines[2].busy_ns, 5000u);
  EXPECT_EQ(c.engines[0].capacity, std::nullopt);
}

TEST(DrmFdinfo, AmdgpuLegacyTakesResidentFromDrmMemory) {
  DrmClient c = parsed(fdinfo_fixture("amdgpu-legacy.txt"));
  EXPECT_EQ(c.driver, "amdgpu");
  EXPECT_EQ(c.client_id, 42u);
  EXPECT_EQ(names(c.regions), "vram gtt cpu");
  EXPECT_EQ(region(c, "vram").resident, 1073741824u);
  EXPECT_EQ(region(c, "vram").total, std::nullopt);
  EXPECT_EQ(region(c, "gtt").resident, 2 * MiB);  // "drm-memory-gtt: \t": a space, then a tab
  EXPECT_EQ(region(c, "cpu").resident, 0u);
  EXPECT_EQ(names(c.engines), "gfx compute dma dec enc enc_1 jpeg");
  EXPECT_EQ(c.engines[5].busy_ns, 0u);
}

// amdgpu on kernels 5.14 to 5.18 (Ubuntu 22.04's 5.15): no drm- key at all. "kB" is KiB (the
// driver divides bytes by 1024); the percentages' hundredths are printed unpadded.
TEST(DrmFdinfo, AmdgpuBeforeDrmUsageStatsReadsPdevKilobytesAndPercentages) {
  DrmClient c = parsed(fdinfo_fixture("amdgpu-5.15.txt"));
  EXPECT_EQ(c.driver, "amdgpu");
  EXPECT_TRUE(c.amdgpu_legacy);
  EXPECT_EQ(c.pdev, "0000:03:00.0");
  EXPECT_EQ(c.pasid, 32771u);
  EXPECT_EQ(c.client_id, std::nullopt);
  EXPECT_EQ(names(c.regions), "vram gtt cpu");
  EXPECT_EQ(region(c, "vram").resident, 1048576 * KiB);
  EXPECT_EQ(region(c, "gtt").resident, 4096 * KiB);
  EXPECT_EQ(region(c, "cpu").resident, 0u);
  EXPECT_EQ(region(c, "vram").total, std::nullopt);
  EXPECT_EQ(region(c, "vram").shared, std::nullopt);
  EXPECT_EQ(names(c.engines), "gfx0 compute0 dma1");
  EXPECT_EQ(c.engines[0].percent_hundredths, 5u);     // "0.5%": perc 5, 0.05%
  EXPECT_EQ(c.engines[1].percent_hundredths, 1250u);  // "12.50%"
  EXPECT_EQ(c.engines[2].percent_hundredths, 307u);   // "3.7%": 3.07%
  EXPECT_EQ(c.engines[0].busy_ns, std::nullopt);
  EXPECT_TRUE(has_usage_stats(fdinfo_fixture("amdgpu-5.15.txt")));
}

// The first drm-usage-stats form posted for amdgpu (drm-pdev, drm-memory-*, per-ring engines,
// no drm-client-id): standard keys, no id.
TEST(DrmFdinfo, AmdgpuStandardFormWithoutClientId) {
  DrmClient c = parsed(fdinfo_fixture("amdgpu-no-client-id.txt"));
  EXPECT_EQ(c.driver, "amdgpu");
  EXPECT_FALSE(c.amdgpu_legacy);
  EXPECT_EQ(c.pdev, "0000:03:00.0");
  EXPECT_EQ(c.pasid, 32771u);
  EXPECT_EQ(c.client_id, std::nullopt);
  EXPECT_EQ(region(c, "vram").resident, 512 * MiB);
  EXPECT_EQ(region(c, "gtt").resident, 2 * MiB);
  EXPECT_EQ(names(c.engines), "gfx0 dma1");
  EXPECT_EQ(c.engines[0].busy_ns, 4466200u);
}

// i915 from 5.19 until its memory stats: engines only. No region: memory unknown, not 0.
TEST(DrmFdinfo, I915BeforeMemoryStatsHasEnginesAndNoRegion) {
  DrmClient c = parsed(fdinfo_fixture("i915-engines-only.txt"));
  EXPECT_EQ(c.driver, "i915");
  EXPECT_EQ(c.client_id, 12u);
  EXPECT_TRUE(c.regions.empty());
  EXPECT_EQ(names(c.engines), "render copy video video-enhance");
  EXPECT_EQ(c.engines[2].capacity, 2u);
  DrmClient guc = parsed(fdinfo_fixture("i915-guc-no-engines.txt"));
  EXPECT_EQ(guc.client_id, 13u);
  EXPECT_TRUE(guc.regions.empty());
  EXPECT_TRUE(guc.engines.empty());
}

TEST(DrmFdinfo, AmdgpuLegacyKeysCountOnlyWithoutDrmDriver) {
  // With drm-driver, "pdev:" and "vram mem:" are some other driver's keys: ignored.
  DrmClient c = parsed("drm-driver: foo\npdev: 0000:01:00.0\nvram mem: 12 kB\ngfx0: 1.0%\n");
  EXPECT_EQ(c.driver, "foo");
  EXPECT_EQ(c.pdev, std::nullopt);
  EXPECT_TRUE(c.regions.empty());
  EXPECT_TRUE(c.engines.empty());
  EXPECT_FALSE(c.amdgpu_legacy);
  // drm-memory-<r> (had a kernel printed both) ranks above "vram mem:".
  DrmClient both = parsed("pdev: 0000:01:00.0\nvram mem: 12 kB\ndrm-memory-vram: 7\n");
  EXPECT_EQ(region(both, "vram").resident, 7u);
  // Without a memory line, or without pdev, it is no DRM file.
  EXPECT_EQ(error_of("pdev: 0000:01:00.0\npasid: 3\n"), "no drm-driver line: not a DRM file");
  EXPECT_EQ(error_of("vram mem: 12 kB\n"), "no drm-driver line: not a DRM file");
  EXPECT_FALSE(has_usage_stats("pos:\t0\nflags:\t02\nmnt_id:\t24\n"));
  EXPECT_FALSE(has_usage_stats("pdev:\t0000:01:00.0\n"));
  EXPECT_TRUE(has_usage_stats("drm-driver:\tsomething\n"));
}

TEST(DrmFdinfo, AmdgpuLegacyMalformedValuesAreErrors) {
  const std::string head = "pdev:\t0000:03:00.0\n";
  EXPECT_EQ(error_of(head + "vram mem:\t12 KiB\n"),
            "fdinfo line 2 (vram mem): unknown unit \"KiB\" (want kB)");
  EXPECT_EQ(error_of(head + "vram mem:\t18014398509481984 kB\n"),
            "fdinfo line 2 (vram mem): \"18014398509481984 kB\" does not fit in 64 bits as bytes");
  EXPECT_EQ(error_of(head + "vram mem:\t1 kB\ngfx0:\t1.100%\n"),
            "fdinfo line 3 (gfx0): \"1.100%\" is not a percentage with hundredths");
  EXPECT_EQ(error_of(head + "vram mem:\t1 kB\ngfx0:\tx%\n"),
            "fdinfo line 3 (gfx0): \"x%\" is not a percentage");
  EXPECT_EQ(error_of(head + "vram mem:\t1 kB\ngfx0:\t1.5%%\n"),
            "fdinfo line 3 (gfx0): \"1.5%%\" is not a percentage");
  EXPECT_EQ(error_of("pdev:\t\nvram mem:\t1 kB\n"), "fdinfo line 1 (pdev): the value is empty");
  EXPECT_EQ(error_of("drm-driver: amdgpu\npasid: none\n"),
            "fdinfo line 2 (pasid): \"none\" is not a number");
  // A space before "%" (a posted revision) and a whole percentage are read.
  DrmClient c = parsed(head + "vram mem:\t1 kB\ngfx0:\t7.25 %\nsdma0:\t100%\n");
  EXPECT_EQ(c.engines[0].percent_hundredths, 725u);
  EXPECT_EQ(c.engines[1].percent_hundredths, 10000u);
}

TEST(DrmFdinfo, I915ReadsSystemRegionsAndEngineCapacity) {
  DrmClient c = parsed(fdinfo_fixture("i915.txt"));
  EXPECT_EQ(c.driver, "i915");
  EXPECT_EQ(c.pdev, "0000:00:02.0");
  EXPECT_EQ(c.client_id, 7u);
  EXPECT_EQ(names(c.regions), "system0 stolen-system0");
  EXPECT_EQ(region(c, "system0").total, 3145728u);
  EXPECT_EQ(region(c, "system0").resident, 3 * MiB);
  EXPECT_EQ(region(c, "system0").active, 0u);
  EXPECT_EQ(region(c, "stolen-system0").total, 0u);
  EXPECT_EQ(names(c.engines), "render copy video video-enhance");
  EXPECT_EQ(c.engines[0].busy_ns, 25662044495u);
  EXPECT_EQ(c.engines[2].capacity, 2u);  // "drm-engine-capacity-video: 2", a space
  EXPECT_EQ(c.engines[2].busy_ns, 0u);
  EXPECT_EQ(c.engines[3].capacity, std::nullopt);
}

TEST(DrmFdinfo, XeCyclesAreEnginesNotRegions) {
  DrmClient c = parsed(fdinfo_fixture("xe.txt"));
  EXPECT_EQ(c.driver, "xe");
  EXPECT_EQ(c.client_id, 4u);
  EXPECT_EQ(names(c.regions), "system gtt vram0 stolen");
  EXPECT_EQ(region(c, "gtt").total, 192 * KiB);
  EXPECT_EQ(region(c, "vram0").total, 23992 * KiB);
  EXPECT_EQ(region(c, "vram0").shared, 16 * MiB);
  EXPECT_EQ(names(c.engines), "rcs bcs vcs vecs ccs");
  EXPECT_EQ(c.engines[0].cycles, 28257900u);
  EXPECT_EQ(c.engines[0].total_cycles, 7655183225u);
  EXPECT_EQ(c.engines[0].busy_ns, std::nullopt);
  EXPECT_EQ(c.engines[0].capacity, std::nullopt);
  EXPECT_EQ(c.engines[2].capacity, 2u);
  EXPECT_EQ(c.engines[4].capacity, 4u);
}

TEST(DrmFdinfo, UnitsConvertExactly) {
  DrmClient c = parsed(
      "drm-driver:\tamdgpu\n"
      "drm-total-vram:\t1048576 KiB\n"
      "drm-shared-vram:\t3 MiB\n"
      "drm-resident-vram:\t4097\n"
      "drm-purgeable-vram:  \t 1  KiB \n"
      "drm-active-vram:\t0\n");
  const RegionMemory& vram = region(c, "vram");
  EXPECT_EQ(vram.total, 1073741824u);
  EXPECT_EQ(vram.shared, 3145728u);
  EXPECT_EQ(vram.resident, 4097u);  // no unit: bytes
  EXPECT_EQ(vram.purgeable, 1024u);
  EXPECT_EQ(vram.active, 0u);
}

TEST(DrmFdinfo, LargestFiguresThatFitIn64Bits) {
  DrmClient c = parsed(
      "drm-driver: xe\n"
      "drm-total-vram0: 18446744073709551615\n"
      "drm-shared-vram0: 17592186044415 MiB\n"
      "drm-resident-vram0: 18014398509481983 KiB\n");
  EXPECT_EQ(region(c, "vram0").total, UINT64_MAX);
  EXPECT_EQ(region(c, "vram0").shared, 17592186044415u * MiB);
  EXPECT_EQ(region(c, "vram0").resident, 18014398509481983u * KiB);
}

TEST(DrmFdinfo, DrmResidentBeatsDrmMemoryWhicheverComesFirst) {
  for (std::string text : {"drm-driver: amdgpu\ndrm-memory-vram: 100 KiB\ndrm-resident-vram: 7\n",
                           "drm-driver: amdgpu\ndrm-resident-vram: 7\ndrm-memory-vram: 100 KiB\n"})
    EXPECT_EQ(region(parsed(text), "vram").resident, 7u) << text;
}

TEST(DrmFdinfo, DrmMemoryAloneIsResident) {
  DrmClient c = parsed("drm-driver: amdgpu\ndrm-total-gtt: 5\ndrm-memory-gtt: 2 KiB\n");
  EXPECT_EQ(names(c.regions), "gtt");
  EXPECT_EQ(region(c, "gtt").resident, 2048u);
  EXPECT_EQ(region(c, "gtt").total, 5u);
}

TEST(DrmFdinfo, PrefixCollisionsNameTheRightThing) {
  DrmClient c = parsed(
      "drm-driver: xe\n"
      "drm-total-cycles-rcs: 99\n"
      "drm-engine-capacity-gfx: 3\n"
      "drm-engine-gfx: 11 ns\n"
      "drm-total-memory: 1 MiB\n"
      "drm-resident-memory: 4 KiB\n");
  EXPECT_EQ(names(c.regions), "memory");
  EXPECT_EQ(names(c.engines), "rcs gfx");
  EXPECT_EQ(c.engines[0].total_cycles, 99u);
  EXPECT_EQ(c.engines[0].cycles, std::nullopt);
  EXPECT_EQ(c.engines[1].capacity, 3u);
  EXPECT_EQ(c.engines[1].busy_ns, 11u);
  EXPECT_EQ(region(c, "memory").total, 1 * MiB);
  EXPECT_EQ(region(c, "memory").resident, 4 * KiB);
}

TEST(DrmFdinfo, EngineTimeWithoutUnitIsNanoseconds) {
  EXPECT_EQ(parsed("drm-driver: msm\ndrm-engine-gpu: 250\n").engines.at(0).busy_ns, 250u);
}

TEST(DrmFdinfo, LaterOfTwoEqualKeysWins) {
  DrmClient c = parsed(
      "drm-driver: i915\ndrm-client-id: 1\ndrm-total-local0: 1\ndrm-driver: xe\n"
      "drm-client-id: 2\ndrm-total-local0: 2\n");
  EXPECT_EQ(c.driver, "xe");
  EXPECT_EQ(c.client_id, 2u);
  EXPECT_EQ(names(c.regions), "local0");
  EXPECT_EQ(region(c, "local0").total, 2u);
}

TEST(DrmFdinfo, OtherKeysAreIgnoredWhateverTheirValue) {
  DrmClient c = parsed(
      "pos:\tnot a number\n"
      "no colon at all\n"
      "drm-client-name:\tmy job: 12 kB\n"
      "drm-evicted-vram:\tjunk\n"
      "drm-maxfreq-gpu:\t800 MHz\n"
      "amd-evicted-vram:\t0 KiB\n"
      "drm-driver:\tpanfrost\n"
      "DRM-TOTAL-VRAM:\tjunk\n");
  EXPECT_EQ(c.driver, "panfrost");
  EXPECT_EQ(c.pdev, std::nullopt);
  EXPECT_EQ(c.client_id, std::nullopt);
  EXPECT_TRUE(c.regions.empty());
  EXPECT_TRUE(c.engines.empty());
}

TEST(DrmFdinfo, RegionLookupOfAnAbsentName) {
  EXPECT_EQ(parsed("drm-driver: i915\n").region("vram"), nullptr);
}

TEST(DrmFdinfo, UnknownUnitIsAnErrorNamingLineAndKey) {
  EXPECT_EQ(error_of("drm-driver: amdgpu\npos: 0\ndrm-total-vram: 12 kB\n"),
            "fdinfo line 3 (drm-total-vram): unknown unit \"kB\" (want none (bytes), KiB or MiB)");
  EXPECT_EQ(error_of("drm-driver: amdgpu\ndrm-engine-gfx: 5 ms\n"),
            "fdinfo line 2 (drm-engine-gfx): unknown unit \"ms\" (want ns)");
  EXPECT_EQ(error_of("drm-driver: i915\ndrm-engine-capacity-vcs: 2 ns\n"),
            "fdinfo line 2 (drm-engine-capacity-vcs): unknown unit \"ns\" (want none)");
  EXPECT_NE(error_of("drm-driver: xe\ndrm-total-gtt: 1 GiB\n").find("line 2 (drm-total-gtt)"),
            std::string::npos);
  EXPECT_NE(error_of("drm-client-id: 42 KiB\ndrm-driver: xe\n").find("line 1 (drm-client-id)"),
            std::string::npos);
}

TEST(DrmFdinfo, NotANumberIsAnError) {
  EXPECT_EQ(error_of("drm-driver: xe\n\n\ndrm-cycles-rcs: lots\n"),
            "fdinfo line 4 (drm-cycles-rcs): \"lots\" is not a number");
  for (std::string v : {"", "-1", "+5", "0x10", " KiB", "1.5 MiB"})
    EXPECT_NE(error_of("drm-driver: xe\ndrm-total-gtt: " + v + "\n").find("line 2 (drm-total-gtt)"),
              std::string::npos)
        << v;
}

TEST(DrmFdinfo, FiguresTooLargeFor64BitsAreErrors) {
  EXPECT_EQ(error_of("drm-driver: amdgpu\ndrm-total-vram: 18446744073709551615 MiB\n"),
            "fdinfo line 2 (drm-total-vram): \"18446744073709551615 MiB\" does not fit in 64 "
            "bits as bytes");
  EXPECT_EQ(error_of("drm-driver: amdgpu\ndrm-total-vram: 17592186044416 MiB\n"),
            "fdinfo line 2 (drm-total-vram): \"17592186044416 MiB\" does not fit in 64 bits as "
            "bytes");
  EXPECT_EQ(error_of("drm-driver: amdgpu\ndrm-engine-gfx: 18446744073709551616 ns\n"),
            "fdinfo line 2 (drm-engine-gfx): \"18446744073709551616 ns\" does not fit in 64 bits");
}

TEST(DrmFdinfo, MissingDriverIsNotADrmFile) {
  for (std::string text : {"", "\n\n", "pos:\t0\nflags:\t02\nmnt_id:\t24\nino:\t1075\n",
                           "drm-client-id: 4\ndrm-total-vram: 1 KiB\n", "drm-driver-x: amdgpu\n"}) {
    auto c = parse_fdinfo(text);
    ASSERT_FALSE(c.ok()) << text;
    EXPECT_EQ(c.error().message, "no drm-driver line: not a DRM file");
    EXPECT_FALSE(c.error().hint.empty());
  }
}

TEST(DrmFdinfo, EmptyNamesAndValuesAreErrors) {
  EXPECT_EQ(error_of("drm-driver:\t\n"), "fdinfo line 1 (drm-driver): the value is empty");
  EXPECT_EQ(error_of("drm-driver: xe\ndrm-pdev: \n"),
            "fdinfo line 2 (drm-pdev): the value is empty");
  EXPECT_EQ(error_of("drm-driver: xe\ndrm-total-: 1\n"),
            "fdinfo line 2 (drm-total-): the key names no memory region");
  EXPECT_EQ(error_of("drm-driver: xe\ndrm-engine-capacity-: 1\n"),
            "fdinfo line 2 (drm-engine-capacity-): the key names no engine");
}

TEST(DrmFdinfo, BinaryJunkIsRefusedAndQuotedSafely) {
  std::string junk;
  for (int i = 0; i < 4096; ++i) junk += static_cast<char>((i * 131 + 7) % 256);
  EXPECT_EQ(error_of(junk), "no drm-driver line: not a DRM file");
  std::string message = error_of("drm-driver: x\ndrm-total-vram: \x1b[31m\0\xff\n"sv);
  EXPECT_EQ(message, "fdinfo line 2 (drm-total-vram): \"?[31m??\" is not a number");
}

TEST(DrmFdinfo, AMebibyteLineIsHandledAndNotEchoed) {
  const std::string long_text(MiB, '7');
  EXPECT_EQ(error_of(long_text), "no drm-driver line: not a DRM file");
  std::string message = error_of("drm-driver: amdgpu\ndrm-total-vram: " + long_text + "\n");
  EXPECT_EQ(message.rfind("fdinfo line 2 (drm-total-vram): \"7777", 0), 0u) << message;
  EXPECT_LT(message.size(), 200u);
  // A long region name is still a name: the parser keeps it whole.
  DrmClient c = parsed("drm-driver: amdgpu\ndrm-total-" + std::string(MiB, 'v') + ": 1\n");
  ASSERT_EQ(c.regions.size(), 1u);
  EXPECT_EQ(c.regions[0].name.size(), MiB);
}

TEST(DrmFdinfo, DeviceLocalRegionsByPrefix) {
  for (std::string_view r : {"vram", "vram0", "vram1", "local0", "local1", "lmem"})
    EXPECT_TRUE(is_device_local(r)) << r;
  for (std::string_view r : {"gtt", "cpu", "system", "system0", "memory", "stolen", "stolen-local0",
                             "stolen-system0", "", "VRAM", "vra"})
    EXPECT_FALSE(is_device_local(r)) << r;
}

TEST(DrmFdinfo, DeviceLocalRegionsOfTheFixtures) {
  auto local = [](const std::string& file) {
    std::string out;
    for (const RegionMemory& r : parsed(fdinfo_fixture(file)).regions)
      if (is_device_local(r.name)) out += (out.empty() ? "" : " ") + r.name;
    return out;
  };
  EXPECT_EQ(local("amdgpu.txt"), "vram");
  EXPECT_EQ(local("amdgpu-legacy.txt"), "vram");
  EXPECT_EQ(local("i915.txt"), "");
  EXPECT_EQ(local("xe.txt"), "vram0");
}

}  // namespace

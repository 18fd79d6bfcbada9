// The process-record layout probe and validation, over hand-made byte buffers as a driver
// would leave them: canary-filled, then overwritten with records of some stride.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "backend/nvml/abi.h"
#include "backend/nvml/process_records.h"
#include "byte_units.h"

namespace gpureap::backend::nvml {
namespace {

using core::GpuProcessKind;

using testing::kGiB;
constexpr std::uint32_t kNoInstance = 0xFFFFFFFFu;

struct Record {
  std::uint32_t pid;
  std::uint64_t used;
  std::uint32_t gpu_instance = kNoInstance;
  std::uint32_t compute_instance = kNoInstance;
  std::uint64_t cc_protected = 0;
};

template <class T>
void put(std::vector<std::byte>& buffer, std::size_t offset, T value) {
  std::memcpy(buffer.data() + offset, &value, sizeof value);
}

// A buffer of `capacity` records of the largest stride, canary-filled, with `records`
// written at `stride` the way a driver copies whole structs (padding included).
std::vector<std::byte> driver_buffer(const std::vector<Record>& records, std::size_t stride,
                                     std::size_t capacity = 8) {
  std::vector<std::byte> buffer(capacity * kLargestRecordStride, kCanaryByte);
  for (std::size_t i = 0; i < records.size(); ++i) {
    const std::size_t base = i * stride;
    std::memset(buffer.data() + base, 0, stride);
    put(buffer, base, records[i].pid);
    put(buffer, base + 8, records[i].used);
    if (stride >= 24) {
      put(buffer, base + 16, records[i].gpu_instance);
      put(buffer, base + 20, records[i].compute_instance);
    }
    if (stride >= 32) put(buffer, base + 24, records[i].cc_protected);
  }
  return buffer;
}

RecordLimits limits() {
  return RecordLimits{4194304, 80 * kGiB};
}

const std::vector<Record> kThree = {
    {4242, 8 * kGiB}, {5120, 81 * kGiB / 2, 3, 0}, {6001, 4 * kGiB}};

TEST(nvmlProcessRecords, CandidateStridesFollowTheFunctionVersion) {
  EXPECT_EQ(candidate_strides(1), std::vector<std::size_t>{16});
  EXPECT_EQ(candidate_strides(2), std::vector<std::size_t>{24});
  EXPECT_EQ(candidate_strides(3), (std::vector<std::size_t>{24, 32}));
}

TEST(nvmlProcessRecords, WrittenExtentStopsAtTheLastOverwrittenByte) {
  std::vector<std::byte> buffer(64, kCanaryByte);
  EXPECT_EQ(written_extent(buffer), 0u);
  buffer[0] = std::byte{0};
  buffer[23] = std::byte{1};
  EXPECT_EQ(written_extent(buffer), 24u);
}

TEST(nvmlProcessRecords, Reads24ByteV3Records) {
  const auto buffer = driver_buffer(kThree, 24);
  auto decoded = decode_process_records(buffer, 3, 3, limits(), GpuProcessKind::Compute);
  ASSERT_TRUE(decoded.ok()) << decoded.error().message;
  EXPECT_EQ(decoded->stride, 24u);
  ASSERT_EQ(decoded->processes.size(), 3u);
  EXPECT_EQ(decoded->processes[0].pid, 4242);
  EXPECT_EQ(decoded->processes[0].used_bytes, 8 * kGiB);
  EXPECT_EQ(decoded->processes[0].gpu_instance_id, std::nullopt);
  EXPECT_EQ(decoded->processes[0].compute_instance_id, std::nullopt);
  EXPECT_EQ(decoded->processes[1].pid, 5120);
  EXPECT_EQ(decoded->processes[1].used_bytes, 81 * kGiB / 2);
  EXPECT_EQ(decoded->processes[1].gpu_instance_id, 3u);
  EXPECT_EQ(decoded->processes[1].compute_instance_id, 0u);
  EXPECT_EQ(decoded->processes[2].pid, 6001);
  EXPECT_EQ(decoded->processes[2].kind, GpuProcessKind::Compute);
}

TEST(nvmlProcessRecords, Reads32ByteR535Records) {
  const auto buffer = driver_buffer(kThree, 32);
  auto decoded = decode_process_records(buffer, 3, 3, limits(), GpuProcessKind::Graphics);
  ASSERT_TRUE(decoded.ok()) << decoded.error().message;
  EXPECT_EQ(decoded->stride, 32u);
  ASSERT_EQ(decoded->processes.size(), 3u);
  EXPECT_EQ(decoded->processes[1].pid, 5120);
  EXPECT_EQ(decoded->processes[1].gpu_instance_id, 3u);
  EXPECT_EQ(decoded->processes[2].pid, 6001);
  EXPECT_EQ(decoded->processes[2].used_bytes, 4 * kGiB);
  EXPECT_EQ(decoded->processes[2].kind, GpuProcessKind::Graphics);
}

TEST(nvmlProcessRecords, ASingleRecordStillRevealsItsStride) {
  auto one24 = driver_buffer({{77, kGiB}}, 24);
  auto decoded = decode_process_records(one24, 1, 3, limits(), GpuProcessKind::Compute);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded->stride, 24u);
  auto one32 = driver_buffer({{77, kGiB}}, 32);
  decoded = decode_process_records(one32, 1, 3, limits(), GpuProcessKind::Compute);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded->stride, 32u);
  EXPECT_EQ(decoded->processes[0].pid, 77);
}

// 32-byte records crafted so that a 24-byte reading is plausible too: only how far the
// driver wrote can tell them apart.
TEST(nvmlProcessRecords, CanaryDecidesWhenBothLayoutsLookPlausible) {
  const std::vector<Record> records = {{300, kGiB, kNoInstance, kNoInstance, 1000}, {7, 0, 0, 0}};
  const auto buffer = driver_buffer(records, 32);
  const RecordLimits l = limits();
  ASSERT_TRUE(is_plausible(read_record(buffer, 1, 24), l)) << "test data must be ambiguous";
  ASSERT_TRUE(is_plausible(read_record(buffer, 1, 32), l));
  auto decoded = decode_process_records(buffer, 2, 3, l, GpuProcessKind::Compute);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded->stride, 32u);
  EXPECT_EQ(decoded->processes[1].pid, 7);
}

TEST(nvmlProcessRecords, GarbageIsRejectedWithTheLayoutError) {
  std::vector<std::byte> buffer(8 * kLargestRecordStride, kCanaryByte);
  for (std::size_t i = 0; i < 3 * 24; ++i) buffer[i] = std::byte(0xD0 + (i & 0x0F));
  auto decoded = decode_process_records(buffer, 3, 3, limits(), GpuProcessKind::Compute);
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.error().message, kLayoutNotRecognised);
}

TEST(nvmlProcessRecords, ADriverWritingPastTheLargestLayoutIsRejected) {
  // 40-byte records: a layout gpureap does not know.
  std::vector<std::byte> buffer(8 * kLargestRecordStride, kCanaryByte);
  for (std::size_t i = 0; i < 2; ++i) {
    std::memset(buffer.data() + i * 40, 0, 40);
    put(buffer, i * 40, std::uint32_t(100 + i));
    put(buffer, i * 40 + 8, kGiB);
  }
  EXPECT_FALSE(decode_process_records(buffer, 2, 3, limits(), GpuProcessKind::Compute).ok());
}

TEST(nvmlProcessRecords, NotAvailableMemoryIsUnknownNotHuge) {
  const auto buffer = driver_buffer({{4242, NVML_VALUE_NOT_AVAILABLE}}, 24);
  auto decoded = decode_process_records(buffer, 1, 3, limits(), GpuProcessKind::Compute);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded->processes[0].pid, 4242);
  EXPECT_FALSE(decoded->processes[0].used_bytes.has_value());
}

TEST(nvmlProcessRecords, ImplausibleFieldsFailValidation) {
  const RecordLimits l = limits();
  EXPECT_TRUE(is_plausible({4242, kGiB, 0, 0}, l));
  EXPECT_TRUE(is_plausible({4194304, 80 * kGiB, kNoInstance, kNoInstance}, l));
  EXPECT_FALSE(is_plausible({0, kGiB, 0, 0}, l)) << "pid 0";
  EXPECT_FALSE(is_plausible({4194305, kGiB, 0, 0}, l)) << "pid above pid_max";
  EXPECT_FALSE(is_plausible({4242, 80 * kGiB + 1, 0, 0}, l)) << "more memory than the GPU";
  EXPECT_FALSE(is_plausible({4242, kGiB, 64, 0}, l)) << "gpu instance id";
  EXPECT_FALSE(is_plausible({4242, kGiB, 0, 0xA5A5A5A5}, l)) << "compute instance id";
  EXPECT_TRUE(is_plausible({4242, NVML_VALUE_NOT_AVAILABLE, 0, 0}, l));
  EXPECT_TRUE(is_plausible({4242, 100 * kGiB, 0, 0}, RecordLimits{4194304, std::nullopt}))
      << "unknown total skips the memory check";
}

TEST(nvmlProcessRecords, OneImplausibleRecordRejectsTheWholeList) {
  const auto buffer = driver_buffer({{4242, kGiB}, {0, kGiB}}, 24);
  EXPECT_FALSE(decode_process_records(buffer, 2, 3, limits(), GpuProcessKind::Compute).ok());
}

TEST(nvmlProcessRecords, V1RecordsHaveNoInstanceIds) {
  const auto buffer = driver_buffer({{11, kGiB, 0, 0}, {12, 2 * kGiB, 0, 0}}, 16);
  auto decoded = decode_process_records(buffer, 2, 1, limits(), GpuProcessKind::ServerClient);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded->stride, 16u);
  EXPECT_EQ(decoded->processes[1].pid, 12);
  EXPECT_EQ(decoded->processes[1].used_bytes, 2 * kGiB);
  EXPECT_EQ(decoded->processes[1].gpu_instance_id, std::nullopt);
  EXPECT_EQ(decoded->processes[1].kind, GpuProcessKind::ServerClient);
}

TEST(nvmlProcessRecords, V2AcceptsOnly24Bytes) {
  EXPECT_TRUE(
      decode_process_records(driver_buffer(kThree, 24), 3, 2, limits(), GpuProcessKind::Compute)
          .ok());
  EXPECT_FALSE(
      decode_process_records(driver_buffer(kThree, 32), 3, 2, limits(), GpuProcessKind::Compute)
          .ok());
}

TEST(nvmlProcessRecords, NoRecordsIsAnEmptyList) {
  std::vector<std::byte> buffer(8 * kLargestRecordStride, kCanaryByte);
  auto decoded = decode_process_records(buffer, 0, 3, limits(), GpuProcessKind::Compute);
  ASSERT_TRUE(decoded.ok());
  EXPECT_TRUE(decoded->processes.empty());
}

TEST(nvmlProcessRecords, ABufferClearedByTheDriverFallsBackToValidation) {
  auto buffer = driver_buffer({{4242, kGiB}, {4243, 2 * kGiB}}, 24);
  std::fill(buffer.begin() + 48, buffer.end(), std::byte{0});
  auto decoded = decode_process_records(buffer, 2, 3, limits(), GpuProcessKind::Compute);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded->stride, 24u);
  EXPECT_EQ(decoded->processes[1].pid, 4243);
}

core::DriverProcess entry(pid_t pid, GpuProcessKind kind, std::optional<std::uint64_t> used) {
  core::DriverProcess p;
  p.pid = pid;
  p.kind = kind;
  p.used_bytes = used;
  return p;
}

TEST(nvmlProcessRecords, APidInSeveralListsIsCountedOnce) {
  std::vector<core::DriverProcess> merged;
  merge_process(merged, entry(10, GpuProcessKind::Compute, kGiB));
  merge_process(merged, entry(11, GpuProcessKind::Compute, std::nullopt));
  merge_process(merged, entry(10, GpuProcessKind::Graphics, kGiB));
  merge_process(merged, entry(11, GpuProcessKind::Graphics, 2 * kGiB));
  merge_process(merged, entry(12, GpuProcessKind::ServerClient, std::nullopt));
  merge_process(merged, entry(12, GpuProcessKind::Compute, std::nullopt));
  ASSERT_EQ(merged.size(), 3u);
  EXPECT_EQ(merged[0].kind, GpuProcessKind::Compute) << "equal memory keeps the first kind";
  EXPECT_EQ(merged[0].used_bytes, kGiB);
  EXPECT_EQ(merged[1].kind, GpuProcessKind::Graphics) << "known memory beats unknown";
  EXPECT_EQ(merged[1].used_bytes, 2 * kGiB);
  EXPECT_EQ(merged[2].kind, GpuProcessKind::ServerClient);
}

TEST(nvmlProcessRecords, APidInTheMpsListIsAnMpsClientWhateverElseListsIt) {
  std::vector<core::DriverProcess> merged;
  merge_process(merged, entry(20, GpuProcessKind::Compute, kGiB));
  merge_process(merged, entry(21, GpuProcessKind::Compute, std::nullopt));
  merge_process(merged, entry(22, GpuProcessKind::Compute, kGiB));
  merge_process(merged, entry(20, GpuProcessKind::ServerClient, kGiB));
  merge_process(merged, entry(21, GpuProcessKind::ServerClient, 2 * kGiB));
  merge_process(merged, entry(22, GpuProcessKind::Graphics, kGiB));
  ASSERT_EQ(merged.size(), 3u);
  EXPECT_EQ(merged[0].kind, GpuProcessKind::ServerClient)
      << "compute and MPS (M+C) is an MPS client";
  EXPECT_EQ(merged[0].used_bytes, kGiB);
  EXPECT_EQ(merged[1].kind, GpuProcessKind::ServerClient);
  EXPECT_EQ(merged[1].used_bytes, 2 * kGiB);
  EXPECT_EQ(merged[2].kind, GpuProcessKind::Compute) << "no MPS list: the first kind stays";
}

}  // namespace
}  // namespace gpureap::backend::nvml

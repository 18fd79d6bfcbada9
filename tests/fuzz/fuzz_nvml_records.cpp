// NVML process records (backend/nvml/process_records.h): what a driver of any release, or a
// broken one, writes into the process-list buffer. A 15-byte header chooses what the driver
// returned with it; the rest is the buffer:
//   [0] function version 1..3   [1] record count 0..64
//   [2] bit 0: pad the buffer with the canary to count * kLargestRecordStride, as
//       process_lists allocates it; bit 1: the GPU's total memory is known; bits 2-3: kind
//   [3..10] total memory, little-endian   [11..14] pid_max, little-endian (1..4194304)
#include <cstring>
#include <vector>

#include "backend/nvml/process_records.h"
#include "fuzz_check.h"

namespace nvml = gpureap::backend::nvml;

namespace {

template <class T>
T little_endian(const uint8_t* p) {
  T v = 0;
  for (size_t i = sizeof(T); i > 0; --i) v = static_cast<T>(v << 8) | p[i - 1];
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr size_t kHeader = 15;
  if (size < kHeader) return 0;
  const int api_version = 1 + data[0] % 3;
  const std::size_t count = data[1] % 65;
  const bool full_size = data[2] & 1;
  nvml::RecordLimits limits;
  if (data[2] & 2) limits.total_bytes = little_endian<std::uint64_t>(data + 3);
  const auto kind = static_cast<gpureap::core::GpuProcessKind>((data[2] >> 2 & 3) % 3);
  limits.pid_max = 1 + little_endian<std::uint32_t>(data + 11) % 4194304;

  std::vector<std::byte> buffer(size - kHeader);
  if (!buffer.empty()) std::memcpy(buffer.data(), data + kHeader, buffer.size());
  if (full_size && buffer.size() < count * nvml::kLargestRecordStride)
    buffer.resize(count * nvml::kLargestRecordStride, nvml::kCanaryByte);

  auto decoded = nvml::decode_process_records(buffer, count, api_version, limits, kind);
  if (!decoded) {
    FUZZ_CHECK(decoded.error().message == nvml::kLayoutNotRecognised);
    return 0;
  }
  FUZZ_CHECK(decoded->processes.size() == count);
  FUZZ_CHECK(count * decoded->stride <= buffer.size());
  bool stride_is_candidate = false;
  for (std::size_t s : nvml::candidate_strides(api_version))
    stride_is_candidate |= s == decoded->stride;
  FUZZ_CHECK(stride_is_candidate);
  std::vector<gpureap::core::DriverProcess> merged;
  for (const auto& p : decoded->processes) {
    // Only records that passed validation are believed.
    FUZZ_CHECK(p.pid > 0 && static_cast<std::uint64_t>(p.pid) <= limits.pid_max);
    if (p.used_bytes && limits.total_bytes) FUZZ_CHECK(*p.used_bytes <= *limits.total_bytes);
    if (p.gpu_instance_id) FUZZ_CHECK(*p.gpu_instance_id < nvml::kMaxPlausibleInstanceId);
    if (p.compute_instance_id) FUZZ_CHECK(*p.compute_instance_id < nvml::kMaxPlausibleInstanceId);
    FUZZ_CHECK(p.kind == kind);
    nvml::merge_process(merged, p);
  }
  FUZZ_CHECK(merged.size() <= decoded->processes.size());
  return 0;
}

#include "backend/nvml/process_records.h"

#include <algorithm>
#include <cstring>

#include "backend/nvml/abi.h"

namespace gpureap::backend::nvml {
namespace {

// Field offsets shared by every layout (nvmlProcessInfo_v1_t .. the R535 32-byte struct).
constexpr std::size_t kPidOffset = 0;
constexpr std::size_t kUsedOffset = 8;
constexpr std::size_t kGpuInstanceOffset = 16;
constexpr std::size_t kComputeInstanceOffset = 20;
// The driver has written at least pid..usedGpuMemory of its last record.
constexpr std::size_t kMinimumWrittenPerRecord = kUsedOffset + 8;

template <class T>
T load(std::span<const std::byte> buffer, std::size_t offset) {
  T value;
  std::memcpy(&value, buffer.data() + offset, sizeof(T));
  return value;
}

bool instance_id_plausible(const std::optional<std::uint32_t>& id) {
  return !id || *id == NVML_INSTANCE_ID_NOT_AVAILABLE || *id < kMaxPlausibleInstanceId;
}

std::optional<unsigned> known_instance(const std::optional<std::uint32_t>& id) {
  if (!id || *id == NVML_INSTANCE_ID_NOT_AVAILABLE) return std::nullopt;
  return *id;
}

bool all_plausible(std::span<const std::byte> buffer, std::size_t count, std::size_t stride,
                   const RecordLimits& limits) {
  for (std::size_t i = 0; i < count; ++i) {
    if (!is_plausible(read_record(buffer, i, stride), limits)) return false;
  }
  return true;
}

bool extent_fits(std::size_t extent, std::size_t count, std::size_t stride) {
  return extent >= (count - 1) * stride + kMinimumWrittenPerRecord && extent <= count * stride;
}

// Unknown memory ranks below any known amount.
bool more_memory(const std::optional<std::uint64_t>& a, const std::optional<std::uint64_t>& b) {
  if (!a) return false;
  if (!b) return true;
  return *a > *b;
}

}  // namespace

std::vector<std::size_t> candidate_strides(int api_version) {
  switch (api_version) {
    case 1:
      return {sizeof(nvmlProcessInfo_v1_t)};
    case 2:
      return {sizeof(nvmlProcessInfo_v2_t)};
    default:
      return {sizeof(nvmlProcessInfo_v2_t), sizeof(nvmlProcessInfo_v3_r535_t)};
  }
}

std::size_t written_extent(std::span<const std::byte> buffer, std::byte canary) {
  for (std::size_t i = buffer.size(); i > 0; --i) {
    if (buffer[i - 1] != canary) return i;
  }
  return 0;
}

RawProcessRecord read_record(std::span<const std::byte> buffer, std::size_t index,
                             std::size_t stride) {
  const std::size_t base = index * stride;
  RawProcessRecord record;
  record.pid = load<std::uint32_t>(buffer, base + kPidOffset);
  record.used_gpu_memory = load<std::uint64_t>(buffer, base + kUsedOffset);
  if (stride >= sizeof(nvmlProcessInfo_v2_t)) {
    record.gpu_instance_id = load<std::uint32_t>(buffer, base + kGpuInstanceOffset);
    record.compute_instance_id = load<std::uint32_t>(buffer, base + kComputeInstanceOffset);
  }
  return record;
}

bool is_plausible(const RawProcessRecord& record, const RecordLimits& limits) {
  if (record.pid == 0 || record.pid > limits.pid_max) return false;
  if (record.used_gpu_memory != NVML_VALUE_NOT_AVAILABLE && limits.total_bytes &&
      record.used_gpu_memory > *limits.total_bytes) {
    return false;
  }
  return instance_id_plausible(record.gpu_instance_id) &&
         instance_id_plausible(record.compute_instance_id);
}

core::DriverProcess to_driver_process(const RawProcessRecord& record, core::GpuProcessKind kind) {
  core::DriverProcess process;
  process.pid = static_cast<pid_t>(record.pid);
  process.kind = kind;
  if (record.used_gpu_memory != NVML_VALUE_NOT_AVAILABLE) {
    process.used_bytes = record.used_gpu_memory;
  }
  process.gpu_instance_id = known_instance(record.gpu_instance_id);
  process.compute_instance_id = known_instance(record.compute_instance_id);
  return process;
}

core::Result<DecodedRecords> decode_process_records(std::span<const std::byte> buffer,
                                                    std::size_t count, int api_version,
                                                    const RecordLimits& limits,
                                                    core::GpuProcessKind kind) {
  const std::vector<std::size_t> strides = candidate_strides(api_version);
  if (count == 0) return DecodedRecords{strides.front(), {}};

  const std::size_t extent = written_extent(buffer);
  // A driver that clears the whole buffer leaves no canary to measure; then only the
  // records themselves can tell the layouts apart, and they must single one out.
  const bool canary_overwritten = extent == buffer.size();
  std::optional<std::size_t> chosen;
  std::size_t plausible_layouts = 0;
  std::size_t last_plausible = 0;
  for (std::size_t stride : strides) {
    if (count * stride > buffer.size()) continue;
    if (!all_plausible(buffer, count, stride, limits)) continue;
    ++plausible_layouts;
    last_plausible = stride;
    if (!chosen && extent_fits(extent, count, stride)) chosen = stride;
  }
  if (!chosen && canary_overwritten && plausible_layouts == 1) chosen = last_plausible;
  if (!chosen) return core::Error{kLayoutNotRecognised, ""};

  DecodedRecords decoded;
  decoded.stride = *chosen;
  decoded.processes.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    decoded.processes.push_back(to_driver_process(read_record(buffer, i, *chosen), kind));
  }
  return decoded;
}

void merge_process(std::vector<core::DriverProcess>& processes, core::DriverProcess process) {
  auto same_pid = [&](const core::DriverProcess& p) { return p.pid == process.pid; };
  auto existing = std::find_if(processes.begin(), processes.end(), same_pid);
  if (existing == processes.end()) {
    processes.push_back(std::move(process));
    return;
  }
  // Volta and later list an MPS client in the compute list too: the MPS list says what it is.
  const bool mps_client = existing->kind == core::GpuProcessKind::ServerClient ||
                          process.kind == core::GpuProcessKind::ServerClient;
  if (more_memory(process.used_bytes, existing->used_bytes)) *existing = std::move(process);
  if (mps_client) existing->kind = core::GpuProcessKind::ServerClient;
}

}  // namespace gpureap::backend::nvml

#pragma once
// Decoding the records NVML's process-list functions write, as pure functions over bytes.
// The record stride depends on the function version and, for _v3, on the driver release
// (24 bytes on most, 32 on some R535 releases). Reading with the wrong stride yields
// plausible-looking garbage PIDs, so the stride is probed (how far the driver wrote over a
// canary) and every record is validated before anything is believed.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/gpu.h"
#include "core/result.h"

namespace gpureap::backend::nvml {

// Byte the caller fills the buffer with before the call; the driver overwrites what it uses.
inline constexpr std::byte kCanaryByte{0xA5};
// Buffers are sized with the largest stride any driver writes, so none can overflow them.
inline constexpr std::size_t kLargestRecordStride = 32;
// Instance ids are small integers (MIG has at most a few dozen instances) or "not MIG".
inline constexpr std::uint32_t kMaxPlausibleInstanceId = 64;

// The text Gpu::processes_error gets when no layout fits.
inline constexpr const char* kLayoutNotRecognised =
    "process records from the driver failed validation (struct layout not recognised); "
    "not shown";

struct RecordLimits {
  std::uint64_t pid_max = 4194304;
  std::optional<std::uint64_t> total_bytes;  // GPU memory; unknown skips that check
};

// One record as laid out in memory, before interpretation.
struct RawProcessRecord {
  std::uint32_t pid = 0;
  std::uint64_t used_gpu_memory = 0;
  std::optional<std::uint32_t> gpu_instance_id;  // absent in 16-byte records
  std::optional<std::uint32_t> compute_instance_id;
};

// Strides the function of `api_version` (1, 2, 3 as resolved in the symbol table) may use,
// smallest first.
std::vector<std::size_t> candidate_strides(int api_version);

// One past the last byte that no longer holds `canary`; 0 when the driver wrote nothing.
std::size_t written_extent(std::span<const std::byte> buffer, std::byte canary = kCanaryByte);

// Reads record `index` under `stride`; the caller keeps (index + 1) * stride in bounds.
RawProcessRecord read_record(std::span<const std::byte> buffer, std::size_t index,
                             std::size_t stride);

bool is_plausible(const RawProcessRecord& record, const RecordLimits& limits);

// The record as gpureap reports it: all-ones memory and instance ids become unknown.
core::DriverProcess to_driver_process(const RawProcessRecord& record, core::GpuProcessKind kind);

struct DecodedRecords {
  std::size_t stride = 0;
  std::vector<core::DriverProcess> processes;
};

// Decodes `count` records the driver reported into a buffer pre-filled with kCanaryByte.
// A stride is consistent when the driver wrote into its last record but not past it and
// every record is plausible under it; the smallest consistent stride wins. Fails with
// kLayoutNotRecognised when none is consistent.
core::Result<DecodedRecords> decode_process_records(std::span<const std::byte> buffer,
                                                    std::size_t count, int api_version,
                                                    const RecordLimits& limits,
                                                    core::GpuProcessKind kind);

// Adds `process` to a GPU's list. NVML lists a process once per list it is in (compute,
// graphics, MPS) with the same memory, so a PID seen again is not counted twice: the entry
// kept is the first one with the most memory (unknown memory counts as least). A PID in the
// MPS list is an MPS client whatever else lists it (Volta+ list clients in the compute list
// too, nvidia-smi's "M+C"): its kind is Mps.
void merge_process(std::vector<core::DriverProcess>& processes, core::DriverProcess process);

}  // namespace gpureap::backend::nvml

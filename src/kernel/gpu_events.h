#pragma once
// The GPU errors of the kernel log: each record is offered to every vendor's parser (NVIDIA's
// Xids today; amdgpu and i915 messages would be another entry), the PCI address is matched to
// the GPUs the backends report, and the log clock turned into wall time.
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/gpu.h"
#include "core/kernel_event.h"
#include "kernel/kmsg_reader.h"
#include "kernel/kmsg_record.h"

namespace gpureap::kernel {

// The GPU error one record reports, or nothing. `boot_time`: seconds since the epoch
// (<proc-root>/stat's btime), for the event's wall time.
std::optional<core::KernelGpuEvent> gpu_event(const KmsgRecord& record,
                                              std::optional<long long> boot_time);
// Sets each event's GPU from its PCI address (events of GPUs nobody reports keep none).
void assign_gpus(std::vector<core::KernelGpuEvent>& events, const std::vector<core::Gpu>& gpus);

// The whole log once (doctor, ps): every GPU error in it, oldest first.
core::KernelLog read_kernel_log(const std::string& kmsg_path, std::optional<long long> boot_time,
                                const std::vector<core::Gpu>& gpus);

// The daemon's view: follows the log as it grows (each poll reads only what is new), keeps the
// latest events (bounded) and counts every event per GPU and code since the daemon started.
class KernelLogFollower {
 public:
  explicit KernelLogFollower(std::string kmsg_path, size_t keep = 256);
  // Reads what was written since the last poll; returns the new events.
  std::vector<core::KernelGpuEvent> poll(std::optional<long long> boot_time,
                                         const std::vector<core::Gpu>& gpus);
  // What has been seen so far: the latest events and the reading's state.
  const core::KernelLog& log() const { return log_; }
  // Every event seen since the follower started, by GPU (PCI address), kind and code.
  std::vector<core::KernelEventCount> counts() const;

 private:
  KmsgReader reader_;
  size_t keep_;
  core::KernelLog log_;
  std::map<std::tuple<std::string, std::string, unsigned>, core::KernelEventCount> counts_;
};

}  // namespace gpureap::kernel

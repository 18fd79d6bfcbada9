#pragma once
// The GPU errors of the kernel log: each record is offered to every vendor's parser (the
// backends' registry gives them; each lives in its vendor's folder, src/kernel/<vendor>), the PCI
// address is matched to the GPUs the backends report, and the log clock turned into wall time.
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "core/gpu.h"
#include "core/kernel_event.h"
#include "kernel/kmsg_reader.h"
#include "kernel/kmsg_record.h"

namespace gpureap::kernel {

// What a vendor's catalogue says of one code it logs.
struct KernelCode {
  std::string_view name;    // the vendor's name for it
  std::string_view cause;   // the typical cause
  std::string_view action;  // what to do
};

// One vendor's reader of its driver's kernel messages.
struct KernelLogParser {
  std::string kind;   // the kind of the events it gives: a lower-case name for metrics and JSON
  std::string label;  // the kind as people write it, before a code: doctor, ps and the journal
  // The event one record (facility 0, from the kernel) reports, or nothing: vendor, kind, code,
  // PCI address and what its catalogue says (name, level, needs_reboot).
  std::function<std::optional<core::KernelGpuEvent>(const KmsgRecord&)> parse;
  // Its catalogue's entry for a code, or nothing for a code it does not know.
  std::function<std::optional<KernelCode>(unsigned code)> describe;
  std::string reference;      // where codes the catalogue lacks are documented
  std::string full_messages;  // a command that shows the driver's full messages
  // The name its counts had in the metrics of an earlier release, "<alias>" for
  // gpureap_<alias>_events_total{<alias>="<code>"}: kept as an alias for one release (export).
  std::string metric_alias;
};
using KernelLogParsers = std::vector<KernelLogParser>;

// The GPU error one record reports, or nothing. `boot_time`: seconds since the epoch
// (<proc-root>/stat's btime), for the event's wall time; `read_at`: when the record was read,
// which no record of this boot can be stamped after (KernelGpuEvent::stamp).
std::optional<core::KernelGpuEvent> gpu_event(const KmsgRecord& record,
                                              std::optional<long long> boot_time,
                                              std::chrono::system_clock::time_point read_at,
                                              const KernelLogParsers& parsers);
// Sets each event's GPU from its PCI address (events of GPUs nobody reports keep none).
void assign_gpus(std::vector<core::KernelGpuEvent>& events, const std::vector<core::Gpu>& gpus);

// The whole log once (doctor, ps): every GPU error and OOM kill in it, oldest first.
core::KernelLog read_kernel_log(const std::string& kmsg_path, std::optional<long long> boot_time,
                                const std::vector<core::Gpu>& gpus,
                                const KernelLogParsers& parsers);

// The daemon's view: follows the log as it grows (each poll reads only what is new), keeps the
// latest events and OOM kills (kernel/oom_kill.h; each bounded) and counts every event per GPU
// and code since the daemon started.
class KernelLogFollower {
 public:
  KernelLogFollower(std::string kmsg_path, KernelLogParsers parsers, size_t keep = 256);
  // Reads what was written since the last poll; returns the new events.
  std::vector<core::KernelGpuEvent> poll(std::optional<long long> boot_time,
                                         const std::vector<core::Gpu>& gpus);
  // What has been seen so far: the latest events and the reading's state.
  const core::KernelLog& log() const { return log_; }
  // Every event seen since the follower started, by GPU (PCI address), kind and code.
  std::vector<core::KernelEventCount> counts() const;

 private:
  KmsgReader reader_;
  KernelLogParsers parsers_;
  size_t keep_;
  core::KernelLog log_;
  std::map<std::tuple<std::string, std::string, unsigned>, core::KernelEventCount> counts_;
};

}  // namespace gpureap::kernel

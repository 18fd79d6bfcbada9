#include "kernel/gpu_events.h"

#include "kernel/oom_kill.h"
#include "kernel/pci_address.h"

namespace gpureap::kernel {

std::optional<core::KernelGpuEvent> gpu_event(const KmsgRecord& r,
                                              std::optional<long long> boot_time,
                                              std::chrono::system_clock::time_point read_at,
                                              const KernelLogParsers& parsers) {
  // Only the kernel logs with facility 0: a process that writes to /dev/kmsg gets LOG_USER
  // even when it asks for 0, so a forged driver line is never taken for the driver's.
  if (r.facility != 0) return std::nullopt;
  for (const auto& parser : parsers) {
    if (!parser.parse) continue;
    auto e = parser.parse(r);
    if (!e) continue;
    e->label = parser.label;
    e->seq = r.seq;
    e->since_boot_usec = r.usec;
    // A clock time only where it can be one: a saved or forged log may carry a stamp so far
    // past boot that the clock's nanoseconds would overflow.
    constexpr uint64_t kCenturyUsec = 100ULL * 366 * 24 * 3600 * 1'000'000;
    if (boot_time && *boot_time >= 0 && *boot_time < (1LL << 34) && r.usec < kCenturyUsec) {
      e->time = std::chrono::system_clock::time_point(std::chrono::seconds(*boot_time)) +
                std::chrono::microseconds(r.usec);
      // The boot time is whole seconds and the two clocks drift apart a little: a record
      // written just now may seem to be from a few seconds ahead, never from minutes.
      constexpr auto kClockSlack = std::chrono::seconds(10);
      e->stamp = *e->time > read_at + kClockSlack ? core::KernelStamp::Future
                                                  : core::KernelStamp::ThisBoot;
    }
    return e;
  }
  return std::nullopt;
}

void assign_gpus(std::vector<core::KernelGpuEvent>& events, const std::vector<core::Gpu>& gpus) {
  std::vector<std::pair<std::string, unsigned>> by_address;
  for (const auto& g : gpus)
    if (g.pci_bus_id)
      if (auto a = normalize_pci_address(*g.pci_bus_id)) by_address.emplace_back(*a, g.index);
  for (auto& e : events) {
    e.gpu.reset();
    for (const auto& [address, index] : by_address)
      if (address == e.pci_address) e.gpu = index;
  }
}

core::KernelLog read_kernel_log(const std::string& path, std::optional<long long> boot_time,
                                const std::vector<core::Gpu>& gpus,
                                const KernelLogParsers& parsers) {
  KernelLogFollower once(path, parsers, SIZE_MAX);
  once.poll(boot_time, gpus);
  return once.log();
}

KernelLogFollower::KernelLogFollower(std::string path, KernelLogParsers parsers, size_t keep)
    : reader_(std::move(path)), parsers_(std::move(parsers)), keep_(keep) {}

std::vector<core::KernelGpuEvent> KernelLogFollower::poll(std::optional<long long> boot_time,
                                                          const std::vector<core::Gpu>& gpus) {
  std::vector<core::KernelGpuEvent> fresh;
  const auto read_at = std::chrono::system_clock::now();
  log_.records += reader_.read_new([&](const KmsgRecord& r) {
    if (auto e = gpu_event(r, boot_time, read_at, parsers_)) fresh.push_back(std::move(*e));
    if (auto k = oom_kill(r)) log_.oom_kills.push_back(std::move(*k));
  });
  if (log_.oom_kills.size() > keep_)
    log_.oom_kills.erase(log_.oom_kills.begin(),
                         log_.oom_kills.begin() + static_cast<long>(log_.oom_kills.size() - keep_));
  log_.read = reader_.readable();
  log_.problem = reader_.problem();
  log_.malformed = reader_.malformed();
  assign_gpus(fresh, gpus);
  for (const auto& e : fresh) {
    auto& c = counts_[{e.pci_address, e.kind, e.code}];
    c.pci_address = e.pci_address;
    if (e.gpu) c.gpu = e.gpu;
    c.vendor = e.vendor;
    c.kind = e.kind;
    for (const auto& p : parsers_)
      if (p.kind == e.kind) c.metric_alias = p.metric_alias;
    c.code = e.code;
    ++c.events;
    c.last_time = e.time;
    log_.events.push_back(e);
  }
  if (log_.events.size() > keep_)
    log_.events.erase(log_.events.begin(),
                      log_.events.begin() + static_cast<long>(log_.events.size() - keep_));
  return fresh;
}

std::vector<core::KernelEventCount> KernelLogFollower::counts() const {
  std::vector<core::KernelEventCount> out;
  for (const auto& [key, c] : counts_) out.push_back(c);
  return out;
}

}  // namespace gpureap::kernel

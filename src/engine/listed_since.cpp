#include "engine/listed_since.h"

#include <time.h>
#include <unistd.h>

namespace gpureap::engine {

uint64_t boot_ticks_now() {
  timespec ts{};
  ::clock_gettime(CLOCK_BOOTTIME, &ts);
  const auto hz = static_cast<uint64_t>(::sysconf(_SC_CLK_TCK));
  // As the kernel turns a start time in nanoseconds into ticks: rounded down.
  const uint64_t ns = static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + ts.tv_nsec;
  return ns / (1000000000ull / hz);
}

const std::map<pid_t, uint64_t>& ListedSince::update(const core::DriverReading& drivers,
                                                     uint64_t now_ticks) {
  std::map<pid_t, uint64_t> now;
  for (const auto& g : drivers.gpus)
    for (const auto& p : g.processes) {
      auto was = since_.find(p.pid);
      now.emplace(p.pid, was != since_.end() ? was->second : now_ticks);
    }
  since_ = std::move(now);
  return since_;
}

}  // namespace gpureap::engine

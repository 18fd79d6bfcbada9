#pragma once
// Samples and rules for the alert tests: snapshots at chosen times, with chosen GPU memory.
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "alert/rule.h"
#include "sample/sample.h"
#include "snapshot_builders.h"

namespace gpureap::testing {

using SteadyTime = std::chrono::steady_clock::time_point;
inline const SteadyTime kT0{std::chrono::hours(1000)};
inline const std::chrono::system_clock::time_point kWall0{std::chrono::seconds(1'700'000'000)};

// A sample taken `at` after kT0 (and as long after kWall0 on the wall clock).
inline sample::Sample sample_at(std::chrono::milliseconds at, std::vector<core::Gpu> gpus,
                                std::vector<core::HostProcess> ps = {},
                                std::vector<doctor::Finding> findings = {}) {
  SnapshotOptions o;
  o.at = kWall0 + at;
  sample::Sample s;
  s.snapshot =
      std::make_shared<const core::Snapshot>(make_snapshot(std::move(ps), std::move(gpus), o));
  s.findings = std::move(findings);
  s.taken = kT0 + at;
  return s;
}

// GPU `index` with `used` of 100 GiB in use, attributed to nobody, with a UUID.
inline core::Gpu gpu_used(unsigned index, uint64_t used) {
  core::Gpu g = gpu(index, index, used, {});
  g.uuid = "GPU-" + std::to_string(index);
  return g;
}

inline alert::Rule memory_rule(double above, std::chrono::milliseconds for_duration = {}) {
  alert::Rule r;
  r.name = "GpuMemoryHigh";
  r.condition = alert::Condition::MemoryRatio;
  r.ratio_above = above;
  r.for_duration = for_duration;
  return r;
}

// Whether `done` holds within a minute (the senders and the dispatcher work on their own
// threads, late on a loaded machine).
inline bool wait_for(const std::function<bool()>& done) {
  for (int i = 0; i < 6000 && !done(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return done();
}

}  // namespace gpureap::testing

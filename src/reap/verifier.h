#pragma once
// A kill is finished when the GPU memory is back, not when the process is gone. After the
// execution the verifier polls the driver until every listing the killed processes held
// (their own PIDs, and the gone PIDs they kept alive) has left the driver's lists and each
// GPU's used memory has dropped accordingly, or until --wait-release expires. Polling reads
// only the driver (and /proc/PID/stat of the exited targets): a full /proc scan costs tens to
// hundreds of milliseconds on a busy host and is taken once, at the end, only to name who
// still holds memory. Without a driver, verification is that no exited target still holds a
// device file: /proc shows each gone, a zombie or a new process (an exited process has no
// file table).
#include <chrono>
#include <functional>
#include <optional>
#include <vector>

#include "core/snapshot.h"
#include "reap/executor.h"
#include "reap/plan.h"
#include "reap/world.h"

namespace gpureap::reap {

struct VerifyOptions {
  std::chrono::milliseconds wait_release{60'000};
  std::chrono::milliseconds interval{150};
  // Checked between polls: true ends the wait early, as if it had timed out (a daemon that
  // is stopping does not wait out --wait-release).
  std::function<bool()> cancelled;
};

struct Holder {
  pid_t pid = 0;
  std::optional<std::string> comm;
};

// One (PID, GPU) entry of the driver's lists that the kill should make disappear.
struct ListingRelease {
  pid_t pid = 0;
  unsigned gpu = 0;
  std::optional<uint64_t> bytes;
  bool left_list = false;   // the driver no longer lists it
  bool released = false;    // ... and the GPU's used memory dropped accordingly
  bool unreadable = false;  // the last read of the GPU's list failed: nothing is known
  // Processes the plan left alone share its files (Target::sharers_left): nothing to wait for.
  std::vector<pid_t> kept_by_plan;
  std::optional<std::chrono::steady_clock::time_point> released_at;
  std::vector<Holder> held_by;  // live processes that still keep it (when not released)
};

struct GpuRelease {
  unsigned index = 0;
  std::optional<uint64_t> used_before, used_after;
  uint64_t expected_drop = 0;  // known memory of the listings that left
  bool memory_back = true;     // the unattributed memory did not grow by what they held
};

struct Verification {
  bool backend_available = false;
  std::vector<ListingRelease> listings;
  std::vector<GpuRelease> gpus;
  std::vector<pid_t> reaped_zombies;  // zombie targets gone by the end
  std::vector<pid_t> still_holding;   // exited targets a later snapshot still shows holding
  int polls = 0;
  bool timed_out = false;
  std::chrono::steady_clock::time_point finished{};

  const ListingRelease* listing(pid_t pid, unsigned gpu) const;
};

// Where the verifier looks.
struct ReleaseSource {
  // The driver's view, once per poll. Its rows need only the driver's listings: a join of the
  // backend report with an empty /proc view will do (see driver_snapshot).
  std::function<core::Snapshot()> driver;
  // A full snapshot, taken once at the end when something is still held, to name its holders.
  std::function<core::Snapshot()> full;
  // /proc/PID/stat of one process; empty when there is no such process.
  std::function<std::optional<core::ProcessStat>(pid_t)> stat;
};

// Polls source.driver until the memory is back (first at once, then every interval).
Verification verify(const Plan& plan, const std::vector<Execution>& executions,
                    const ReleaseSource& source, const VerifyOptions& options);

// The driver's report joined with an empty /proc view: rows hold only the listings.
core::Snapshot driver_snapshot(core::DriverReading drivers);

// Where a world looks: its drivers alone for the polls, a full collection at the end, /proc for
// the exited targets. The world must outlive the source.
ReleaseSource release_source(const World& world);

}  // namespace gpureap::reap

#pragma once
// Hand-built processes, GPUs and snapshots for tests of the join and its consumers.
#include <sys/sysmacros.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "core/snapshot.h"

namespace gpureap::testing {

constexpr uint64_t GiB = 1ull << 30;
constexpr uint64_t MiB = 1ull << 20;

inline core::HostProcess proc(pid_t pid, pid_t ppid, pid_t pgid, char state = 'S', pid_t sid = 0) {
  core::HostProcess p;
  p.stat.pid = pid;
  p.stat.ppid = ppid;
  p.stat.pgid = pgid;
  p.stat.sid = sid ? sid : pgid;
  p.stat.state = state;
  p.stat.comm = "p" + std::to_string(pid);
  p.stat.start_ticks = 1000 + static_cast<uint64_t>(pid);
  p.details = core::ProcessDetails{};
  p.details->ns_pids = {pid};
  p.details->uid = 0;
  p.details->user = "root";
  p.details->cmdline = {"/usr/bin/p" + std::to_string(pid)};
  return p;
}

// /dev/nvidia<minor>'s hold on these fds: device 195:<minor>, a GPU file.
inline core::DeviceHold nvidia_hold(unsigned minor, std::vector<int> fds,
                                    std::optional<std::string> open_file = std::nullopt) {
  return {"/dev/nvidia" + std::to_string(minor),
          "nvidia",
          ::makedev(195, minor),
          true,
          std::move(fds),
          std::move(open_file)};
}

// /dev/nvidiactl's hold: the driver's control file, which reaches no GPU.
inline core::DeviceHold nvidiactl_hold(std::vector<int> fds) {
  return {"/dev/nvidiactl", "nvidiactl", ::makedev(195, 255), false, std::move(fds), {}};
}

// Holds /dev/nvidia<minor> on fd 5 and /dev/nvidiactl on fd 4.
inline core::HostProcess holder(pid_t pid, pid_t ppid, pid_t pgid, unsigned minor = 0,
                                char state = 'S') {
  auto p = proc(pid, ppid, pgid, state);
  p.devices.push_back(nvidia_hold(minor, {5}));
  p.devices.push_back(nvidiactl_hold({4}));
  return p;
}

// `p` owned by user `user` (uid `uid`).
inline core::HostProcess owned(core::HostProcess p, uid_t uid, const std::string& user) {
  p.details->uid = uid;
  p.details->user = user;
  return p;
}

inline core::DriverProcess listed(pid_t pid, std::optional<uint64_t> bytes) {
  core::DriverProcess d;
  d.pid = pid;
  d.used_bytes = bytes;
  return d;
}

inline core::Gpu gpu(unsigned index, unsigned minor, uint64_t used,
                     std::vector<core::DriverProcess> procs) {
  core::Gpu g;
  g.index = index;
  g.minor = minor;
  g.device_numbers = {::makedev(195, minor)};
  g.name = "Test GPU";
  g.memory.total_bytes = 100 * GiB;
  g.memory.used_bytes = used;
  g.processes = std::move(procs);
  return g;
}

// One NVIDIA backend that answers with these GPUs, as the registry's backends are combined.
inline core::DriverReading drivers(std::vector<core::Gpu> gpus, bool available = true) {
  core::BackendReport b;
  b.name = "nvml";
  b.vendor = "nvidia";
  b.available = available;
  b.gpus = std::move(gpus);
  std::vector<core::BackendReport> reports;
  reports.push_back(std::move(b));
  return core::combine(std::move(reports));
}

struct SnapshotOptions {
  bool child_ns = false;
  size_t uninspectable = 0;
  std::chrono::system_clock::time_point at =
      std::chrono::system_clock::time_point(std::chrono::seconds(1'700'000'000));
  std::map<pid_t, uint64_t> listed_since;               // core::ProcView::listed_since
  std::map<pid_t, uint64_t> listed_first_process;       // core::ProcView::listed_first_process
  std::map<pid_t, pid_t> exited_parents;                // core::ProcView::exited_parents
  std::map<pid_t, std::vector<core::ProcessEnd>> ends;  // core::ProcView::ends
  std::vector<core::RankExit> rank_exits;               // core::ProcView::rank_exits
  std::optional<long long> boot_time;                   // core::ProcView::boot_time
};

inline core::Snapshot make_snapshot(std::vector<core::HostProcess> ps, std::vector<core::Gpu> gpus,
                                    SnapshotOptions o = {}) {
  std::sort(ps.begin(), ps.end(), [](const core::HostProcess& a, const core::HostProcess& b) {
    return a.stat.pid < b.stat.pid;
  });
  core::ProcView v;
  v.processes = std::move(ps);
  v.in_child_pid_namespace = o.child_ns;
  v.uninspectable = o.uninspectable;
  v.listed_since = std::move(o.listed_since);
  v.listed_first_process = std::move(o.listed_first_process);
  v.exited_parents = std::move(o.exited_parents);
  v.ends = std::move(o.ends);
  v.rank_exits = std::move(o.rank_exits);
  v.boot_time = o.boot_time;
  v.driver_device_files = {"nvml"};
  return core::join(std::move(v), drivers(std::move(gpus)), "host", o.at);
}

}  // namespace gpureap::testing

#include "supervise/job_usage.h"

#include <map>

#include "supervise/job_tree.h"

namespace gpureap::supervise {
namespace {

bool row_is_job(const core::ProcessRow& row, const IsJobProcess& is_job) {
  std::optional<uint64_t> start;
  // A zombie still has its /proc entry and start time; it is the same process.
  if (row.process) start = row.process->stat.start_ticks;
  return is_job(row.pid, start);
}

}  // namespace

std::vector<JobGpuUse> job_gpu_usage(const core::Snapshot& snapshot, const IsJobProcess& is_job) {
  std::map<unsigned, JobGpuUse> by_gpu;
  for (const auto& row : snapshot.rows) {
    if (!row.listed_by_driver || !row_is_job(row, is_job)) continue;
    for (const auto& use : row.gpus) {
      auto& u = by_gpu[use.index];
      u.index = use.index;
      u.bytes += use.used_bytes.value_or(0);
      ++u.processes;
    }
  }
  std::vector<JobGpuUse> out;
  out.reserve(by_gpu.size());
  for (auto& [index, use] : by_gpu) out.push_back(use);
  return out;
}

std::vector<HeldMemory> memory_held_by_job(const core::Snapshot& snapshot,
                                           const IsJobProcess& is_job) {
  std::vector<HeldMemory> out;
  for (const auto& row : snapshot.rows) {
    if (!row.listed_by_driver || !row_is_job(row, is_job)) continue;
    for (const auto& use : row.gpus) {
      HeldMemory h;
      h.gpu = use.index;
      h.pid = row.pid;
      h.used_bytes = use.used_bytes;
      h.process_alive = row.process && is_alive(row.process->stat);
      for (auto a : row.anomalies) h.anomalies.emplace_back(core::to_string(a));
      out.push_back(std::move(h));
    }
  }
  return out;
}

std::vector<HeldFiles> files_held_by_job(const core::Snapshot& snapshot,
                                         const IsJobProcess& is_job) {
  std::vector<HeldFiles> out;
  for (const auto& p : snapshot.proc.processes) {
    if (!p.holds_device() || !is_alive(p.stat) || !is_job(p.stat.pid, p.stat.start_ticks)) continue;
    HeldFiles h;
    h.pid = p.stat.pid;
    h.comm = p.stat.comm;
    for (const auto& d : p.devices) h.paths.push_back(d.path);
    out.push_back(std::move(h));
  }
  return out;
}

}  // namespace gpureap::supervise

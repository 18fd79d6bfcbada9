#include "supervise/gpu_sampler.h"

#include <condition_variable>
#include <map>
#include <mutex>

#include "supervise/job_usage.h"

namespace gpureap::supervise {
namespace {

// "nvml", or "nvml,drm" when several backends sampled the job.
std::string backend_names(const core::DriverReading& drivers) {
  std::string out;
  for (const auto& b : drivers.backends) out += (out.empty() ? "" : ",") + b.name;
  return out;
}

}  // namespace

struct GpuSampler::State {
  State(collect::Collector c, std::shared_ptr<JobMembers> m)
      : collector(std::move(c)), members(std::move(m)) {}
  collect::Collector collector;
  std::shared_ptr<JobMembers> members;
  std::chrono::milliseconds interval{0};
  Clock::time_point job_start;

  mutable std::mutex mutex;
  std::condition_variable wake;      // the thread: a request or stop
  std::condition_variable finished;  // callers: a snapshot completed, or the thread ended
  uint64_t requested = 0;            // fresh() calls so far
  uint64_t served = 0;               // requests made before the last completed collection
  bool stopping = false;
  bool done = false;
  std::shared_ptr<const core::Snapshot> latest;
  GpuSampling sampling;
  std::map<unsigned, GpuPeak> peaks;

  // Caller holds mutex.
  void record(const core::Snapshot& snap, Clock::time_point taken) {
    ++sampling.samples;
    const auto& drivers = snap.drivers;
    if (drivers.any_available()) {
      sampling.available = true;
      sampling.error.reset();
      sampling.error_code.reset();
    } else if (!sampling.available) {
      if (const auto* down = drivers.first_down()) {
        sampling.error = down->error;
        if (down->error_code) sampling.error_code = core::to_string(*down->error_code);
      }
    }
    sampling.backend = backend_names(drivers);
    auto is_job = [this](pid_t pid, std::optional<uint64_t> start) {
      return members->contains(pid, start);
    };
    for (const auto& use : job_gpu_usage(snap, is_job)) {
      auto& peak = peaks[use.index];
      if (peak.processes != 0 && use.bytes <= peak.peak_bytes) continue;
      peak.index = use.index;
      peak.peak_bytes = use.bytes;
      peak.processes = use.processes;
      peak.at = std::chrono::duration_cast<std::chrono::milliseconds>(taken - job_start);
      if (const auto* gpu = snap.gpu(use.index)) {
        peak.name = gpu->name;
        peak.uuid = gpu->uuid;
      }
    }
  }
};

GpuSampler::GpuSampler(collect::Collector collector, std::shared_ptr<JobMembers> members,
                       std::chrono::milliseconds interval, Clock::time_point job_start)
    : state_(std::make_shared<State>(std::move(collector), std::move(members))) {
  state_->interval = interval;
  state_->job_start = job_start;
  state_->sampling.interval = interval;
}

GpuSampler::~GpuSampler() {
  stop();
}

void GpuSampler::start() {
  thread_ = std::thread(&GpuSampler::loop, state_);
}

void GpuSampler::loop(std::shared_ptr<State> s) {
  std::unique_lock lock(s->mutex);
  auto next_due = Clock::now();  // one sample right away: short jobs get one too
  for (;;) {
    auto pending = [&] { return s->stopping || s->requested > s->served; };
    if (s->interval.count() > 0)
      s->wake.wait_until(lock, next_due, pending);
    else
      s->wake.wait(lock, pending);
    if (s->stopping) break;
    uint64_t serving = s->requested;  // every request so far predates this collection
    auto began = Clock::now();
    lock.unlock();
    auto snap = std::make_shared<core::Snapshot>(s->collector.collect());
    std::vector<core::ProcessStat> stats;
    stats.reserve(snap->proc.processes.size());
    for (const auto& p : snap->proc.processes) stats.push_back(p.stat);
    s->members->observe(stats);
    lock.lock();
    s->record(*snap, began);
    s->latest = std::move(snap);
    s->served = std::max(s->served, serving);
    s->finished.notify_all();
    // Never back to back, even when one collection takes longer than the interval.
    next_due = std::max(began + s->interval, Clock::now() + s->interval / 2);
  }
  s->done = true;
  s->finished.notify_all();
}

std::shared_ptr<const core::Snapshot> GpuSampler::fresh(std::chrono::milliseconds timeout) {
  std::unique_lock lock(state_->mutex);
  if (!thread_.joinable() || state_->done) return nullptr;
  uint64_t mine = ++state_->requested;
  state_->wake.notify_all();
  bool ok = state_->finished.wait_for(lock, timeout,
                                      [&] { return state_->served >= mine || state_->done; });
  if (!ok || state_->served < mine) return nullptr;
  return state_->latest;
}

GpuSampling GpuSampler::result() const {
  std::lock_guard lock(state_->mutex);
  GpuSampling out = state_->sampling;
  for (const auto& [index, peak] : state_->peaks) out.peaks.push_back(peak);
  return out;
}

void GpuSampler::stop() {
  if (!thread_.joinable()) return;
  std::unique_lock lock(state_->mutex);
  state_->stopping = true;
  state_->wake.notify_all();
  // A collection in progress normally ends within milliseconds; a wedged driver never does,
  // and gpureap must still exit with the job's status.
  bool ended =
      state_->finished.wait_for(lock, std::chrono::seconds(2), [&] { return state_->done; });
  lock.unlock();
  if (ended)
    thread_.join();
  else
    thread_.detach();
}

}  // namespace gpureap::supervise

#include "supervise/job_sampling.h"

#include <map>
#include <mutex>

#include "supervise/job_usage.h"

namespace gpureap::supervise {

namespace {

// One backend's name, or "a,b" when several backends sampled the job.
std::string backend_names(const core::DriverReading& drivers) {
  std::string out;
  for (const auto& b : drivers.backends) out += (out.empty() ? "" : ",") + b.name;
  return out;
}

// A job of days sampled every second keeps its shape, not its every second.
constexpr size_t kMaxTimelinePoints = 16384;

// Drops every other sample (all GPUs of one sample go together), keeping the first and last.
void thin(std::vector<GpuTimelinePoint>& points) {
  std::vector<GpuTimelinePoint> kept;
  size_t sample = 0;
  for (size_t i = 0; i < points.size(); ++i) {
    if (i > 0 && points[i].at != points[i - 1].at) ++sample;
    if (sample % 2 == 0 || i + 1 == points.size() || points[i].at == points.back().at)
      kept.push_back(points[i]);
  }
  points = std::move(kept);
}

}  // namespace

// The engine's consumer: membership, peaks and the backend's state, on the engine's thread.
class JobSampling::Recorder final : public engine::CollectionConsumer {
 public:
  Recorder(std::shared_ptr<JobMembers> members, std::chrono::milliseconds interval,
           Clock::time_point job_start)
      : members_(std::move(members)), job_start_(job_start) {
    sampling_.interval = interval;
  }

  void on_collection(const engine::Collection& c) override {
    const auto& snap = *c.snapshot;
    std::vector<core::ProcessStat> stats;
    stats.reserve(snap.proc.processes.size());
    for (const auto& p : snap.proc.processes) stats.push_back(p.stat);
    members_->observe(stats);
    std::lock_guard lock(mutex_);
    record(snap, c.began);
  }

  GpuSampling result() const {
    std::lock_guard lock(mutex_);
    GpuSampling out = sampling_;
    for (const auto& [index, peak] : peaks_) out.peaks.push_back(peak);
    out.timeline = timeline_;
    return out;
  }

 private:
  // Caller holds mutex_.
  void record(const core::Snapshot& snap, Clock::time_point taken) {
    ++sampling_.samples;
    const auto& drivers = snap.drivers;
    if (drivers.any_available()) {
      sampling_.available = true;
      sampling_.error.reset();
      sampling_.error_code.reset();
    } else if (const auto* down = drivers.first_down(); down && !sampling_.available) {
      sampling_.error = down->error;
      if (down->error_code) sampling_.error_code = core::to_string(*down->error_code);
    }
    sampling_.backend = backend_names(drivers);
    auto is_job = [this](pid_t pid, std::optional<uint64_t> start) {
      return members_->contains(pid, start);
    };
    const auto usage = job_gpu_usage(snap, is_job);
    if (timeline_.size() + drivers.gpus.size() > kMaxTimelinePoints) thin(timeline_);
    for (const auto& g : drivers.gpus) {
      GpuTimelinePoint point{snap.timestamp, g.index, 0, g.memory.used_bytes, g.memory.total_bytes};
      for (const auto& use : usage)
        if (use.index == g.index) point.job_bytes = use.bytes;
      timeline_.push_back(point);
    }
    for (const auto& use : usage) {
      auto& peak = peaks_[use.index];
      if (peak.processes != 0 && use.bytes <= peak.peak_bytes) continue;
      peak.index = use.index;
      peak.peak_bytes = use.bytes;
      peak.processes = use.processes;
      peak.at = std::chrono::duration_cast<std::chrono::milliseconds>(taken - job_start_);
      if (const auto* gpu = snap.gpu(use.index)) {
        peak.name = gpu->name;
        peak.uuid = gpu->uuid;
      }
    }
  }

  std::shared_ptr<JobMembers> members_;
  Clock::time_point job_start_;
  mutable std::mutex mutex_;
  GpuSampling sampling_;
  std::map<unsigned, GpuPeak> peaks_;
  std::vector<GpuTimelinePoint> timeline_;
};

JobSampling::JobSampling(collect::Collector collector, std::shared_ptr<JobMembers> members,
                         std::chrono::milliseconds interval, Clock::time_point job_start)
    : recorder_(std::make_shared<Recorder>(std::move(members), interval, job_start)),
      engine_(std::move(collector), engine::Cadence{interval}) {
  engine_.add_consumer(recorder_);
}

JobSampling::~JobSampling() {
  stop();
}

void JobSampling::start() {
  engine_.start();
}

std::shared_ptr<const core::Snapshot> JobSampling::fresh(std::chrono::milliseconds timeout) {
  auto c = engine_.fresh(timeout);
  return c ? c->snapshot : nullptr;
}

GpuSampling JobSampling::result() const {
  return recorder_->result();
}

void JobSampling::stop() {
  // A collection in progress normally ends within milliseconds; a wedged driver never does,
  // and gpureap must still exit with the job's status.
  engine_.stop(std::chrono::seconds(2));
}

}  // namespace gpureap::supervise

#pragma once
// The GPU memory the job holds, sampled by the engine on its own thread: a driver library can block
// for a long time (or forever, with a wedged driver), and the main loop must keep forwarding
// signals and reaping meanwhile. Every collection also updates the job's membership, and the main
// loop asks for fresh snapshots (at CMD's exit, for the release check) with a bounded wait,
// so a hung driver delays nothing by more than that bound.
#include <chrono>
#include <memory>

#include "collect/collector.h"
#include "core/snapshot.h"
#include "engine/engine.h"
#include "supervise/job_tree.h"
#include "supervise/run_report.h"

namespace gpureap::supervise {

class JobSampling {
 public:
  using Clock = std::chrono::steady_clock;

  // interval 0: no periodic samples, only the ones asked for with fresh().
  JobSampling(collect::Collector collector, std::shared_ptr<JobMembers> members,
              std::chrono::milliseconds interval, Clock::time_point job_start);
  JobSampling(const JobSampling&) = delete;
  JobSampling& operator=(const JobSampling&) = delete;
  ~JobSampling();

  // Starts sampling. Call after CMD is forked: a driver library is loaded on the first sample, and
  // its file descriptors must not leak into the job.
  void start();
  // A snapshot whose collection began after this call; null when none completes in time.
  std::shared_ptr<const core::Snapshot> fresh(std::chrono::milliseconds timeout);
  // Peaks, sample count and backend state so far.
  GpuSampling result() const;
  // Stops sampling; a collection stuck in the backend is left behind rather than waited for.
  void stop();

  class Recorder;

 private:
  std::shared_ptr<Recorder> recorder_;
  engine::Engine engine_;
};

}  // namespace gpureap::supervise

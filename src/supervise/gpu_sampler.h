#pragma once
// Samples the GPU memory the job holds, on its own thread: NVML can block for a long time
// (or forever, with a wedged driver), and the main loop must keep forwarding signals and
// reaping meanwhile. Every snapshot taken here also updates the job's membership, and the
// main loop asks this thread for fresh snapshots (at CMD's exit, for the release check)
// with a bounded wait, so a hung driver delays nothing by more than that bound.
#include <chrono>
#include <memory>
#include <thread>

#include "collect/collector.h"
#include "core/snapshot.h"
#include "supervise/job_tree.h"
#include "supervise/run_report.h"

namespace gpureap::supervise {

class GpuSampler {
 public:
  using Clock = std::chrono::steady_clock;

  // interval 0: no periodic samples, only the ones asked for with fresh().
  GpuSampler(collect::Collector collector, std::shared_ptr<JobMembers> members,
             std::chrono::milliseconds interval, Clock::time_point job_start);
  GpuSampler(const GpuSampler&) = delete;
  GpuSampler& operator=(const GpuSampler&) = delete;
  ~GpuSampler();

  // Starts the thread. Call after CMD is forked: NVML is loaded on the first sample, and its
  // file descriptors must not leak into the job.
  void start();
  // A snapshot whose collection began after this call; null when none completes in time.
  std::shared_ptr<const core::Snapshot> fresh(std::chrono::milliseconds timeout);
  // Peaks, sample count and backend state so far.
  GpuSampling result() const;
  // Stops the thread; one stuck in the backend is left behind rather than waited for.
  void stop();

 private:
  struct State;
  static void loop(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;
  std::thread thread_;
};

}  // namespace gpureap::supervise

#pragma once
// One published sample of the daemon: immutable once made, shared by the HTTP handlers and
// the consumers that plug into the daemon's SamplePublisher (cleanup policies and alerts build on
// this).
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/kernel_event.h"
#include "core/snapshot.h"
#include "doctor/finding.h"
#include "doctor/stalled_job.h"
#include "export/prometheus_text.h"
#include "procfs/ipc_residue.h"

namespace gpureap::history {
class History;
}  // namespace gpureap::history

namespace gpureap::sample {

// An earlier sample's snapshot and when it was taken.
struct TimedSnapshot {
  std::chrono::steady_clock::time_point taken;
  std::shared_ptr<const core::Snapshot> snapshot;
};

struct Sample {
  uint64_t sequence = 0;  // 1 for the first sample
  std::shared_ptr<const core::Snapshot> snapshot;
  std::shared_ptr<const core::Snapshot> previous;  // the sample before; null for the first
  std::vector<doctor::Finding> findings;           // doctor over (previous, snapshot)
  bool driver_timed_out = false;                   // the backend is down because it did not answer
  bool holder_scan = false;                        // this sample scanned /proc again
  bool full_scan = false;                          // ... reading every process's fd table
  std::string metrics_text;                        // the /metrics body, rendered once per sample
  std::chrono::steady_clock::time_point taken;
  // A few earlier snapshots, spaced out and newest first, so `doctor` can be answered with a
  // first sample taken --settle before this one (daemon/sample_publisher.h says how far back).
  std::vector<TimedSnapshot> earlier;
  std::shared_ptr<const procfs::IpcResidue> ipc_residue;  // as of the latest check; may be null
  std::shared_ptr<const core::KernelLog> kernel_log;      // null: the daemon follows none
  // The tail of the log of the daemon that starts the servers of other processes' work
  // (WorkServer), read only while the kernel log names a fault of a live server (doctor's
  // evidence).
  std::vector<std::string> work_server_log;
  // How long after a rank's end a stalled job turns critical (the daemon's setting), with which
  // `findings` were examined: the socket's evidence carries it, so a command examines alike.
  std::chrono::milliseconds stalled_job_critical_after = doctor::kStalledJobCriticalAfter;

  // The newest snapshot taken at least `age` before this sample (this one for zero); null when
  // none is kept from that long ago.
  std::shared_ptr<const core::Snapshot> taken_before(std::chrono::milliseconds age) const {
    if (age.count() <= 0) return snapshot;
    for (const auto& e : earlier)
      if (taken - e.taken >= age) return e.snapshot;
    return nullptr;
  }
};

// Something that acts on every sample, on the sampling engine's thread, after it is published. It
// must return quickly (anything slow, like sending an alert, goes to its own thread): the
// next sample waits for it.
class SampleConsumer {
 public:
  virtual ~SampleConsumer() = default;
  virtual void on_sample(const Sample& sample, const history::History& history) = 0;
  // Its own metrics for /metrics (e.g. actions taken), added to every sample's.
  virtual void add_metrics(std::vector<exporter::MetricFamily>& out) const { (void)out; }
};

}  // namespace gpureap::sample

#pragma once
// What the daemon's HTTP endpoints serve, from the latest published sample: never
// from the driver, so a scrape cannot block on a wedged GPU.
#include <atomic>
#include <chrono>
#include <vector>

#include "daemon/holder_tracker.h"
#include "daemon/incident.h"
#include "daemon/sample_body.h"
#include "daemon/sample_publisher.h"
#include "export/http_server.h"
#include "policy/runner.h"

namespace gpureap::daemon {

// Thread-safe: the server's workers call it concurrently.
class HttpContent final {
 public:
  explicit HttpContent(const SamplePublisher& samples) : samples_(samples) {}

  // The daemon's endpoints, in the landing page's order: what the HTTP server serves. Each
  // handler calls this object, which must outlive the server.
  std::vector<exporter::Route> routes();

  exporter::Reply metrics();
  exporter::Reply health();
  exporter::Reply snapshot();
  // Lines of root's files (a WorkServer's log) only for a client that sent the bearer token.
  exporter::Reply findings(const exporter::HttpRequest& request);
  exporter::Reply history(const exporter::HistoryRequest& request);
  exporter::Reply policies();
  exporter::Reply releases();
  // /api/v1/status: how the daemon works here (e.g. how it follows GPU device files).
  exporter::Reply status();

  // Before the server starts: the runner /api/v1/policies reports on.
  void set_policies(std::shared_ptr<const policy::PolicyRunner> runner) {
    policies_ = std::move(runner);
  }
  // Before the server starts: the tracker /api/v1/releases reports on (none: scans only).
  void set_tracker(std::shared_ptr<const HolderTracker> tracker) { tracker_ = std::move(tracker); }
  // The incident journal the history document carries (daemon/incident.h).
  void set_incidents(std::shared_ptr<const Incidents> incidents) {
    incidents_ = std::move(incidents);
  }
  std::chrono::milliseconds default_history_span() const;

  // The loop is stalled when no sample finished for this long (set from the config).
  void set_stall_after(std::chrono::milliseconds d) { stall_after_ms_ = d.count(); }
  std::chrono::milliseconds stall_after() const {
    return std::chrono::milliseconds(stall_after_ms_.load());
  }

 private:
  const SamplePublisher& samples_;
  std::shared_ptr<const policy::PolicyRunner> policies_;
  std::shared_ptr<const HolderTracker> tracker_;
  std::shared_ptr<const Incidents> incidents_;
  std::atomic<long long> stall_after_ms_{60000};
  // Every document is built behind the gate. The pages every client gets alike are built once
  // per sample: findings once per kind of reader; history depends on the request.
  BuildGate gate_;
  SampleBody metrics_body_{gate_};
  SampleBody snapshot_body_{gate_};
  SampleBody findings_body_{gate_};             // for a client that sent the token
  SampleBody findings_restricted_body_{gate_};  // for anyone else
};

// How long without a finished sample means the loop is stuck: a driver timeout, a holder
// scan and a generous margin beyond the interval.
std::chrono::milliseconds stall_threshold(std::chrono::milliseconds interval,
                                          std::chrono::milliseconds driver_timeout);

}  // namespace gpureap::daemon

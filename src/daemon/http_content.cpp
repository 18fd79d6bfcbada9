#include "daemon/http_content.h"

#include <string>

#include "core/snapshot.h"
#include "daemon/releases_document.h"
#include "doctor/restricted_evidence.h"
#include "export/history_since.h"
#include "output/doctor_json.h"
#include "output/snapshot_json.h"
#include "policy/status_json.h"
#include "text/time_format.h"

namespace gpureap::daemon {
namespace {

constexpr const char* kJson = "application/json; charset=utf-8";

exporter::Reply not_ready() {
  return {503, "text/plain; charset=utf-8",
          "gpureap is taking its first sample; try again in a moment\n"};
}

// "no GPU 9: this node has GPUs 0, 1": the index asked for and the ones that would answer.
std::string no_such_gpu(unsigned index, const core::Snapshot& snapshot) {
  const auto& gpus = snapshot.drivers.gpus;
  std::string text = "no GPU " + std::to_string(index) + ": ";
  if (gpus.empty()) return text + "this node's drivers report no GPU\n";
  text += gpus.size() == 1 ? "this node has GPU " : "this node has GPUs ";
  for (std::size_t i = 0; i < gpus.size(); ++i)
    text += (i ? ", " : "") + std::to_string(gpus[i].index);
  return text + " (see /api/v1/history for all of them)\n";
}

}  // namespace

std::chrono::milliseconds stall_threshold(std::chrono::milliseconds interval,
                                          std::chrono::milliseconds driver_timeout) {
  return 2 * interval + driver_timeout + std::chrono::seconds(30);
}

exporter::Reply HttpContent::metrics() {
  auto s = samples_.latest();
  if (!s) return not_ready();
  return {200,
          exporter::kPrometheusContentType,
          {},
          metrics_body_.of(s, [](const sample::Sample& sample) { return sample.metrics_text; })};
}

exporter::Reply HttpContent::health() {
  auto s = samples_.latest();
  if (!s) return not_ready();
  auto age = std::chrono::steady_clock::now() - samples_.last_progress();
  auto age_s = std::chrono::duration_cast<std::chrono::seconds>(age).count();
  if (age > stall_after())
    return {
        503, "text/plain; charset=utf-8",
        "stalled: no sample finished for " + std::to_string(age_s) + "s; see the daemon's log\n"};
  // Healthy even when the driver is down: restarting gpureap would not fix the driver, and
  // gpureap_up says so to Prometheus.
  const auto& drivers = s->snapshot->drivers;
  const auto* down = drivers.first_down();
  std::string driver = drivers.any_available() || !down
                           ? "up"
                           : "down (" + down->error.value_or("unknown reason") + ")";
  return {200, "text/plain; charset=utf-8", "ok\ndriver: " + driver + "\n"};
}

exporter::Reply HttpContent::snapshot() {
  auto s = samples_.latest();
  if (!s) return not_ready();
  return {200, kJson, {}, snapshot_body_.of(s, [](const sample::Sample& sample) {
            return output::snapshot_text(*sample.snapshot) + "\n";
          })};
}

exporter::Reply HttpContent::findings(const exporter::HttpRequest& request) {
  auto s = samples_.latest();
  if (!s) return not_ready();
  // Without the token the client may be any local user (the daemon listens on localhost, open,
  // by default).
  const auto reader = request.sent_token ? doctor::Reader::Privileged : doctor::Reader::Anyone;
  auto& body = request.sent_token ? findings_body_ : findings_restricted_body_;
  return {200, kJson, {}, body.of(s, [reader](const sample::Sample& sample) {
            auto findings = sample.findings;
            doctor::show_restricted_evidence(findings, reader);
            return output::dump_json(output::doctor_to_json(*sample.snapshot, findings)) + "\n";
          })};
}

exporter::Reply HttpContent::policies() {
  if (!policies_) return not_ready();
  return {200, kJson,
          output::dump_json(
              policy::policies_to_json(policies_->status(), std::chrono::system_clock::now())) +
              "\n"};
}

exporter::Reply HttpContent::releases() {
  return {200, kJson, output::dump_json(releases_document(tracker_.get())) + "\n"};
}

// gpureap.status/v1: how holders are followed here. "event_source" says how the kernel's
// events name GPU files: "file_handles", or "file_descriptors" (the fallback, with why:
// the kernel then opens the GPU device file in the daemon for each event); null with scans.
// Events wake a collection at once, up to "wake_burst" back to back, then one per
// "min_wake_gap_ms" (daemon/wake_pacer.h).
exporter::Reply HttpContent::status() {
  nlohmann::json tracking = {{"mode", "scans"},
                             {"event_source", nullptr},
                             {"event_source_fallback", nullptr},
                             {"wake_burst", WakePacer::kWakeBurst},
                             {"min_wake_gap_ms", WakePacer::kMinWakeGap.count()}};
  if (tracker_) {
    tracking["mode"] = tracker_->follows_forks() ? "events" : "opens";
    const bool handles = tracker_->event_source() == track::FanotifyWatch::Source::FileHandles;
    tracking["event_source"] = handles ? "file_handles" : "file_descriptors";
    if (!handles) tracking["event_source_fallback"] = tracker_->event_source_fallback();
  }
  nlohmann::json doc = {{"schema", "gpureap.status/v1"}, {"holder_tracking", tracking}};
  return {200, kJson, output::dump_json(doc) + "\n"};
}

exporter::Reply HttpContent::history(const exporter::HistoryRequest& request) {
  auto s = samples_.latest();
  if (!s) return not_ready();
  // Asked against the latest snapshot, not the history: a GPU that exists but has no
  // samples in the span is an empty series, not a missing page.
  if (request.gpu && !s->snapshot->gpu(*request.gpu))
    return {404, "text/plain; charset=utf-8", no_such_gpu(*request.gpu, *s->snapshot)};
  return {200, kJson, gate_.build([&] {
            auto doc = history_document(samples_.history(), *s->snapshot, request.since,
                                        request.gpu, tracker_.get());
            if (incidents_ && !request.gpu)
              doc["incident"] = incidents_->document(
                  request.since, request.until.value_or(std::chrono::system_clock::now()), s.get());
            return output::dump_json(doc) + "\n";
          })};
}

std::vector<exporter::Route> HttpContent::routes() {
  auto serve = [this](exporter::Reply (HttpContent::*page)()) {
    return [this, page](const exporter::HttpRequest&) { return (this->*page)(); };
  };
  auto findings_page = [this](const exporter::HttpRequest& request) { return findings(request); };
  auto history_page = [this](const exporter::HttpRequest& request) {
    auto h = exporter::history_request(request, default_history_span());
    if (!h) return exporter::Reply{400, "text/plain; charset=utf-8", h.error().text() + "\n"};
    return history(*h);
  };
  return {
      {"/metrics", "Prometheus metrics", "", "", false, true, serve(&HttpContent::metrics)},
      {"/healthz", "liveness", "", "", true, true, serve(&HttpContent::health)},
      {"/api/v1/snapshot", "every GPU and holder (the <code>gpureap ps --json</code> document)", "",
       "", false, false, serve(&HttpContent::snapshot)},
      {"/api/v1/findings",
       "what is wrong and how to fix it (the <code>gpureap doctor --json</code> document)", "", "",
       false, false, findings_page},
      {"/api/v1/history", "memory and utilisation over time", "?since=10m", "?gpu=N&since=10m",
       false, false, history_page},
      {"/api/v1/policies", "what each cleanup policy matches and where it stands", "", "", false,
       false, serve(&HttpContent::policies)},
      {"/api/v1/releases", "the latest final closes of GPU device files, with who held each last",
       "", "", false, false, serve(&HttpContent::releases)},
      {"/api/v1/status", "how the daemon follows GPU device files here", "", "", false, false,
       serve(&HttpContent::status)},
  };
}

std::chrono::milliseconds HttpContent::default_history_span() const {
  return samples_.history().limits().window;
}

}  // namespace gpureap::daemon

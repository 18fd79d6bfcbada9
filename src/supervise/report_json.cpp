#include "supervise/report_json.h"

#include "core/duration.h"
#include "reap/arguments.h"
#include "text/escape.h"
#include "text/time_format.h"

namespace gpureap::supervise {
namespace {

using nlohmann::json;

template <class T>
json optional_value(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

json text(std::string_view s) {
  return text::utf8_valid(s);
}

json text_list(const std::vector<std::string>& v) {
  json out = json::array();
  for (const auto& s : v) out.push_back(text(s));
  return out;
}

json signal_value(const std::optional<int>& s) {
  return s ? json(reap::signal_name(*s)) : json(nullptr);
}

const char* to_string(StopReason r) {
  switch (r) {
    case StopReason::None:
      return "none";
    case StopReason::Signal:
      return "signal";
    case StopReason::Timeout:
      return "timeout";
    case StopReason::FailFast:
      return "fail-fast";
  }
  return "none";
}

json leftover_json(const Leftover& l) {
  json signals = json::array();
  for (int s : l.signals) signals.push_back(reap::signal_name(s));
  return {{"pid", l.pid},
          {"comm", text(l.comm)},
          {"command", text_list(l.cmdline)},
          {"devices", text_list(l.devices)},
          {"signals", signals},
          {"ended", l.ended}};
}

json leftovers_json(const std::vector<Leftover>& v) {
  json out = json::array();
  for (const auto& l : v) out.push_back(leftover_json(l));
  return out;
}

json gpu_json(const GpuSampling& g) {
  json peaks = json::array();
  for (const auto& p : g.peaks)
    peaks.push_back({{"index", p.index},
                     {"name", p.name ? text(*p.name) : json(nullptr)},
                     {"uuid", p.uuid ? text(*p.uuid) : json(nullptr)},
                     {"peak_bytes", p.peak_bytes},
                     {"at_seconds", core::seconds(p.at)},
                     {"processes", p.processes}});
  return {{"backend", g.backend},
          {"available", g.available},
          {"error", g.error ? text(*g.error) : json(nullptr)},
          {"error_code", optional_value(g.error_code)},
          {"sample_interval_seconds", core::seconds(g.interval)},
          {"samples", g.samples},
          {"peaks", peaks}};
}

// What could not be verified: why, and what to do. Null where it was.
json error_json(const std::optional<core::Error>& e) {
  return e ? json{{"message", text(e->message)}, {"hint", text(e->hint)}} : json(nullptr);
}

json release_json(const ReleaseCheck& r) {
  json memory = json::array();
  for (const auto& m : r.memory)
    memory.push_back({{"gpu", m.gpu},
                      {"pid", m.pid},
                      {"used_bytes", optional_value(m.used_bytes)},
                      {"process_alive", m.process_alive},
                      {"anomalies", m.anomalies}});
  json files = json::array();
  for (const auto& f : r.files)
    files.push_back({{"pid", f.pid}, {"comm", text(f.comm)}, {"paths", text_list(f.paths)}});
  return {{"checked", r.performed},
          {"skipped_because", r.skipped_because ? json(*r.skipped_because) : json(nullptr)},
          {"method", r.method.empty() ? json(nullptr) : json(r.method)},
          {"released", r.released},
          {"verified", r.performed && !r.error},
          {"error", error_json(r.error)},
          {"seconds", r.took ? json(core::seconds(*r.took)) : json(nullptr)},
          {"timeout_seconds", core::seconds(r.timeout)},
          {"still_held", {{"memory", memory}, {"files", files}}}};
}

}  // namespace

json run_report_to_json(const RunReport& r) {
  json exit = {{"code", r.exit.code},
               {"cause", to_string(r.exit.cause)},
               {"status", optional_value(r.exit.status)},
               {"signal", signal_value(r.exit.signal)},
               {"error", r.exit.error ? json{{"message", text(r.exit.error->message)},
                                             {"hint", text(r.exit.error->hint)}}
                                      : json(nullptr)}};
  json stop = {{"reason", to_string(r.stop.reason)},
               {"signal", signal_value(r.stop.signal)},
               {"after_seconds", r.stop.after ? json(core::seconds(*r.stop.after)) : json(nullptr)},
               {"killed_after_grace", r.stop.killed_after_grace}};
  return {{"schema", kRunSchema},
          {"command", text_list(r.command)},
          {"pid", optional_value(r.pid)},
          {"started_at", text::iso8601_utc(r.started_at)},
          {"ended_at", text::iso8601_utc(r.ended_at)},
          {"runtime_seconds", core::seconds(r.runtime)},
          {"teardown_seconds", core::seconds(r.teardown)},
          {"interactive", r.interactive},
          {"pid1", r.pid1},
          {"exit", exit},
          {"stop", stop},
          {"failed", r.failed ? json{{"pid", r.failed->pid},
                                     {"comm", text(r.failed->comm)},
                                     {"status", optional_value(r.failed->status)},
                                     {"signal", signal_value(r.failed->signal)},
                                     {"after_seconds", core::seconds(r.failed->at)},
                                     {"ended_job", r.failed->ended_job}}
                              : json(nullptr)},
          {"gpu", gpu_json(r.gpu)},
          {"leftovers", leftovers_json(r.leftovers)},
          {"kept", leftovers_json(r.kept)},
          {"teardown_verified", !r.teardown_error},
          {"teardown_error", error_json(r.teardown_error)},
          {"release", release_json(r.release)},
          {"warnings", text_list(r.warnings)}};
}

}  // namespace gpureap::supervise

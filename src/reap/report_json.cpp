#include "reap/report_json.h"

#include <algorithm>

#include "core/gpu_place.h"
#include "reap/arguments.h"
#include "text/escape.h"
#include "text/time_format.h"

namespace gpureap::reap {
namespace {

using nlohmann::json;
using SystemTime = std::chrono::system_clock::time_point;

template <class T>
json opt(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

// Epoch microseconds: the precision the latency benchmark needs.
long long epoch_us(SystemTime t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}

void put_time(json& j, const std::string& key, const std::optional<SystemTime>& t) {
  j[key + "_at"] = t ? json(text::iso8601_utc(*t)) : json(nullptr);
  j[key + "_at_us"] = t ? json(epoch_us(*t)) : json(nullptr);
}

json text(std::string_view s) {
  return text::utf8_valid(s);
}

json gpu_uses(const std::vector<core::GpuUse>& uses) {
  json out = json::array();
  for (const auto& u : uses) {
    json use = {{"index", u.index}, {"used_bytes", opt(u.used_bytes)}};
    // A GPU instance, as every view names it ("0/3").
    if (u.gpu_instance_id) use["instance"] = core::instance_place(u.index, *u.gpu_instance_id);
    out.push_back(std::move(use));
  }
  return out;
}

json holders(const std::vector<Holder>& held) {
  json out = json::array();
  for (const auto& h : held)
    out.push_back({{"pid", h.pid}, {"comm", h.comm ? text(*h.comm) : json(nullptr)}});
  return out;
}

json reason_json(const Reason& r) {
  return {{"kind", std::string(to_string(r.kind))},
          {"gpu", opt(r.gpu)},
          {"instance", r.gpu && r.gpu_instance ? json(core::instance_place(*r.gpu, *r.gpu_instance))
                                               : json(nullptr)},
          {"pid", opt(r.pid)},
          {"anomaly", r.anomaly ? json(std::string(core::to_string(*r.anomaly))) : json(nullptr)},
          {"text", describe(r)}};
}

json target_json(const core::Snapshot& s, const Target& t) {
  json reasons = json::array();
  for (const auto& r : t.reasons) reasons.push_back(reason_json(r));
  json cmdline = json::array();
  for (const auto& a : t.cmdline) cmdline.push_back(text(a));
  core::ProcessStat st;
  st.start_ticks = t.start_ticks;
  auto start = s.start_time(st);
  return {{"pid", t.pid},
          {"start_ticks", t.start_ticks},
          {"start_time", start ? json(text::iso8601_utc(*start)) : json(nullptr)},
          {"comm", text(t.comm)},
          {"cmdline", cmdline},
          {"user", t.user ? text(*t.user) : json(nullptr)},
          {"uid", opt(t.uid)},
          {"state", std::string(1, t.state)},
          {"ppid", t.parent.pid},
          {"parent_comm", t.parent.comm ? text(*t.parent.comm) : json(nullptr)},
          {"pgid", t.pgid},
          {"gpus", gpu_uses(t.gpus)},
          {"memory_bytes", opt(t.memory_bytes())},
          {"keeps", t.keeps},
          {"reasons", reasons},
          {"action", std::string(to_string(t.action))},
          {"refusal", t.refusal.empty() ? json(nullptr) : json(t.refusal)}};
}

json gone_json(const GoneListing& g) {
  return {{"pid", g.pid},
          {"driver_name", g.driver_name ? text(*g.driver_name) : json(nullptr)},
          {"gpus", gpu_uses(g.gpus)},
          {"memory_bytes", opt(g.memory_bytes())},
          {"keepers", g.keepers},
          {"leaked", g.leaked},
          {"foreign_namespace", g.foreign}};
}

json signal_names(const std::vector<int>& signals) {
  json out = json::array();
  for (int s : signals) out.push_back(signal_name(s));
  return out;
}

json outcome_json(const Outcome& o) {
  json j{
      {"pid", o.pid},
      {"outcome", std::string(to_string(o.kind))},
      {"signals", signal_names(o.signals)},
      {"exited_after", o.exited_after ? json(signal_name(*o.exited_after)) : json(nullptr)},
      {"released_bytes", opt(o.released_bytes)},
      {"release_ms", opt(o.release_ms)},
      {"held_by", holders(o.held_by)},
      {"wchan", o.wchan ? text(*o.wchan) : json(nullptr)},
      {"parent", o.parent ? json{{"pid", o.parent->pid},
                                 {"comm", o.parent->comm ? text(*o.parent->comm) : json(nullptr)}}
                          : json(nullptr)},
      {"why", o.why.empty() ? json(nullptr) : text(o.why)}};
  put_time(j, "exited", o.exited_at);
  return j;
}

json gone_outcome_json(const GoneOutcome& g) {
  return {
      {"pid", g.pid},          {"released", g.released},          {"awaited", g.attempted},
      {"bytes", opt(g.bytes)}, {"release_ms", opt(g.release_ms)}, {"held_by", holders(g.held_by)}};
}

json request_json(const KillSettings& k) {
  const Request& r = k.request;
  return {{"pids", r.pids},
          {"gpu", opt(r.gpu)},
          {"instance", r.instance ? json(core::gpu_place_text(*r.instance)) : json(nullptr)},
          {"user", opt(r.user)},
          {"ghosts", r.ghosts},
          {"stopped", r.stopped},
          {"tree", r.tree},
          {"group", r.group},
          {"signal", signal_name(k.exec.signal)},
          {"signal_number", k.exec.signal},
          {"grace_ms", k.exec.grace.count()},
          {"escalate", k.exec.escalate},
          {"wait_release_ms", k.verify.wait_release.count()},
          {"dry_run", k.dry_run}};
}

json summary_json(const Plan& plan, const Report* r) {
  json j{{"targets", plan.targets.size()},
         {"to_signal", plan.count(Action::Signal)},
         {"refused", plan.count(Action::Refused)},
         {"not_permitted", plan.count(Action::NotPermitted)},
         {"zombies", plan.count(Action::Zombie)}};
  if (!r) {
    j["exit_code"] = plan_exit_code(plan);
    return j;
  }
  auto count = [&](OutcomeKind k) {
    return std::count_if(r->outcomes.begin(), r->outcomes.end(),
                         [&](const Outcome& o) { return o.kind == k; });
  };
  j["released"] = count(OutcomeKind::Released);
  j["still_held"] = count(OutcomeKind::StillHeld);
  j["survived"] = count(OutcomeKind::Survived);
  j["not_permitted"] = count(OutcomeKind::NotPermitted);
  json freed = json::array();
  uint64_t total = 0;
  for (const auto& f : r->freed) {
    total += f.bytes;
    freed.push_back({{"gpu", f.index},
                     {"bytes", f.bytes},
                     {"used_before", opt(f.used_before)},
                     {"used_after", opt(f.used_after)}});
  }
  j["freed"] = freed;
  j["freed_bytes"] = total;
  j["polls"] = r->polls;
  j["elapsed_ms"] =
      std::chrono::duration_cast<std::chrono::milliseconds>(r->timing.report - r->timing.started)
          .count();
  j["exit_code"] = r->exit_code;
  return j;
}

json timing_json(const Report& r) {
  json j = json::object();
  put_time(j, "started", r.timing.started);
  put_time(j, "signalled", r.timing.signalled);
  put_time(j, "last_exit", r.timing.last_exit);
  put_time(j, "verified", r.timing.verified);
  put_time(j, "report", r.timing.report);
  // What the reaper adds after the last target is gone: verification and the report.
  j["after_last_exit_ms"] =
      r.timing.last_exit
          ? json(static_cast<double>(epoch_us(r.timing.report) - epoch_us(*r.timing.last_exit)) /
                 1000.0)
          : json(nullptr);
  return j;
}

// The backend the kill relied on, as gpureap.kill/v1 has always named it: the first that
// answered (on a host with one vendor's GPUs, not another backend's absence), else the first that
// is down.
json primary_backend(const core::DriverReading& drivers) {
  if (drivers.backends.empty()) return {{"name", ""}, {"available", false}, {"error", nullptr}};
  const core::BackendStatus* chosen = drivers.first_down();
  for (const auto& b : drivers.backends)
    if (b.available) {
      chosen = &b;
      break;
    }
  const auto& b = chosen ? *chosen : drivers.backends.front();
  return {{"name", b.name}, {"available", b.available}, {"error", opt(b.error)}};
}

}  // namespace

json kill_to_json(const core::Snapshot& s, const Plan& plan, const KillSettings& settings,
                  const Report* report) {
  json targets = json::array(), gone = json::array(), notes = json::array(),
       threads = json::array();
  for (const auto& t : plan.targets) targets.push_back(target_json(s, t));
  for (const auto& g : plan.gone) gone.push_back(gone_json(g));
  // The threads first, as the text plan says them: the first thing to know of those numbers.
  for (const auto& t : plan.threads) {
    threads.push_back(
        {{"tid", t.tid}, {"process", t.process}, {"comm", t.comm ? text(*t.comm) : json(nullptr)}});
    notes.push_back(text(describe(t)));
  }
  for (const auto& n : plan.notes) notes.push_back(text(n));
  json doc{{"schema", kKillSchema},
           {"hostname", text(s.hostname)},
           {"backend", primary_backend(s.drivers)},
           {"complete", s.complete()},
           {"request", request_json(settings)},
           {"plan",
            {{"selection", text(plan.selection)},
             {"targets", targets},
             {"gone", gone},
             {"threads", threads},
             {"notes", notes}}}};
  json outcomes = json::array(), gone_outcomes = json::array();
  if (report) {
    for (const auto& o : report->outcomes) outcomes.push_back(outcome_json(o));
    for (const auto& g : report->gone) gone_outcomes.push_back(gone_outcome_json(g));
  }
  doc["executed"] = report != nullptr;
  doc["outcomes"] = outcomes;
  doc["gone_outcomes"] = gone_outcomes;
  doc["summary"] = summary_json(plan, report);
  doc["timing"] = report ? timing_json(*report) : json(nullptr);
  return doc;
}

}  // namespace gpureap::reap

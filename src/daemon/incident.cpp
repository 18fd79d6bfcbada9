#include "daemon/incident.h"

#include <algorithm>

#include "core/gpu_place.h"
#include "doctor/finding_code.h"
#include "history/journal_document.h"
#include "procfs/user_names.h"
#include "text/escape.h"

namespace gpureap::daemon {
namespace {

using nlohmann::json;

double unix_seconds(std::chrono::system_clock::time_point t) {
  return static_cast<double>(
             std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count()) /
         1000.0;
}

std::string utf8(const std::string& s) {
  return text::utf8_valid(s);
}

// The GPU's state in one word, worst first: memory nothing alive holds, memory gone PIDs hold,
// memory no process is listed for (when doctor thinks it a problem), else attributed.
std::string state_of(const core::GpuMemorySummary& m, const core::Gpu& gpu,
                     const std::vector<doctor::Finding>& findings) {
  if (m.leaked_bytes > 0) return "leaked";
  if (m.ghost_bytes > 0) return "ghost";
  for (const auto& f : findings)
    if (f.has(doctor::FindingCode::UnattributedMemory) &&
        std::find(f.gpus.begin(), f.gpus.end(), gpu.index) != f.gpus.end())
      return "unattributed";
  if (m.attributed_bytes > 0) return "attributed";
  return "idle";
}

// A split GPU's instances (one per GPU instance: its compute instances share its memory).
json instances_now(const core::Gpu& gpu) {
  json out = json::array();
  for (unsigned gi : core::gpu_instance_ids(gpu)) {
    const core::GpuInstance* i = core::find_instance(gpu, gi);
    out.push_back({{"instance", core::instance_place(gpu.index, gi)},
                   {"label", core::instance_words(*i)},
                   {"used_bytes", i->memory.used_bytes ? json(*i->memory.used_bytes) : json()},
                   {"total_bytes", i->memory.total_bytes ? json(*i->memory.total_bytes) : json()}});
  }
  return out;
}

json now_json(const sample::Sample& sample) {
  const auto& s = *sample.snapshot;
  json gpus = json::array();
  for (const auto& gpu : s.drivers.gpus) {
    auto m = s.memory_summary(gpu);
    json stopped = json::array();
    for (const auto& row : s.rows)
      if (row.process && row.process->stat.is_stopped() && core::in_place(s, row, {gpu.index}) &&
          (row.listed_by_driver || !row.keeps.empty()))
        stopped.push_back(row.pid);
    gpus.push_back(
        {{"gpu", gpu.index},
         {"state", state_of(m, gpu, sample.findings)},
         {"used_bytes", gpu.memory.used_bytes ? json(*gpu.memory.used_bytes) : json()},
         {"total_bytes", gpu.memory.total_bytes ? json(*gpu.memory.total_bytes) : json()},
         {"attributed_bytes", m.attributed_bytes},
         {"ghost_bytes", m.ghost_bytes},
         {"leaked_bytes", m.leaked_bytes},
         {"unattributed_bytes", m.unattributed_bytes ? json(*m.unattributed_bytes) : json(nullptr)},
         {"stopped", stopped},
         {"instances", instances_now(gpu)}});
  }
  json problems = json::array();
  for (const auto& f : sample.findings) {
    if (f.severity == doctor::Severity::Info) continue;
    std::string command;
    for (const auto& step : f.remedy)
      if (!step.command.empty()) {
        command = step.command;
        break;
      }
    problems.push_back({{"gpus", f.gpus},
                        {"severity", doctor::to_string(f.severity)},
                        {"code", std::string(doctor::to_string(f.code))},
                        {"summary", utf8(f.summary)},
                        {"command", utf8(command)}});
  }
  return {{"time", unix_seconds(s.timestamp)}, {"gpus", gpus}, {"problems", problems}};
}

}  // namespace

std::string actor_text(const std::string& command, const std::string& user) {
  return "`" + command + "` (" + user + ")";
}

Incidents::Incidents(std::shared_ptr<audit::AuditLog> audit, history::JournalLimits limits)
    : audit_(std::move(audit)), journal_(limits), limits_(limits) {}

void Incidents::set_window(std::chrono::milliseconds window) {
  limits_.window = window;
  journal_.set_limits(limits_);
}

void Incidents::set_tracker(std::shared_ptr<const HolderTracker> tracker) {
  std::lock_guard lock(tracker_mutex_);
  tracker_ = std::move(tracker);
}

void Incidents::on_sample(const sample::Sample& sample, const history::History&) {
  if (!sample.snapshot) return;
  std::shared_ptr<const HolderTracker> tracker;
  {
    std::lock_guard lock(tracker_mutex_);
    tracker = tracker_;
  }
  history::EventClock clock;
  if (tracker) {
    clock.began = [&](pid_t pid) { return tracker->began_holding(pid); };
    // The journal believes a moment only between the sample before and this one.
    clock.released = [&](pid_t pid) {
      return tracker->released_by(pid, std::chrono::system_clock::time_point::min());
    };
  }
  journal_.record(*sample.snapshot, clock);
  if (sample.kernel_log) journal_.record_kernel_events(sample.kernel_log->events);
}

void Incidents::announce(const AnnounceRequest& r, uid_t uid, const std::string& host) {
  history::Announcement a;
  a.at = std::chrono::system_clock::now();
  a.uid = uid;
  a.user = procfs::user_name(uid);
  a.command = r.by;
  a.signal = r.signal;
  a.reason = r.reason;
  a.gpu = r.gpu;
  for (const auto& t : r.targets) a.targets.push_back({t.pid, t.start_ticks, t.comm, t.gpu});
  journal_.announce(a);
  if (!audit_) return;
  audit::Record base;
  base.time = a.at;
  base.host = host;
  base.event = "announced";
  base.action = r.signal;
  base.enforced = true;
  base.outcome = "announced";
  base.actor = audit::Actor{uid, a.user, r.by};
  if (!r.reason.empty()) base.reasons.push_back(r.reason);
  if (r.more > 0) base.detail = std::to_string(r.more) + " more target(s) not listed";
  if (r.targets.empty()) {
    if (r.gpu) base.memory.push_back({*r.gpu, std::nullopt});
    audit_->append(base);
    return;
  }
  for (const auto& t : r.targets) {
    audit::Record rec = base;
    rec.process.pid = t.pid;
    if (t.start_ticks) rec.process.start_ticks = t.start_ticks;
    rec.process.comm = t.comm;
    if (t.gpu) rec.memory.push_back({*t.gpu, std::nullopt});
    audit_->append(rec);
  }
}

json Incidents::document(std::chrono::system_clock::time_point since,
                         std::chrono::system_clock::time_point until,
                         const sample::Sample* latest) const {
  auto view = journal_.query(since, until);
  json gpus = json::array();
  if (latest && latest->snapshot)
    for (const auto& gpu : latest->snapshot->drivers.gpus)
      gpus.push_back({{"gpu", gpu.index},
                      {"name", utf8(gpu.name.value_or(""))},
                      {"uuid", utf8(gpu.uuid.value_or(""))},
                      {"total_bytes",
                       gpu.memory.total_bytes ? json(*gpu.memory.total_bytes) : json(nullptr)}});
  json doc = {{"gpus", gpus}};
  history::journal_to_json(view, doc);
  if (latest && latest->snapshot) doc["now"] = now_json(*latest);
  return doc;
}

}  // namespace gpureap::daemon

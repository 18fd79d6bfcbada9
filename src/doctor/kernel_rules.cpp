// Findings from the kernel log: the GPU errors a driver logged, each GPU's joined to the
// processes they name, so "PID 4242 hit <label> 31" sits next to the ghost it left. Each error is
// named as its vendor's parser writes its kind (KernelLogParser::label), never by a vendor here.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "backend/registry.h"
#include "doctor/diagnose.h"
#include "doctor/evidence.h"
#include "doctor/server_rules.h"
#include "text/time_format.h"

namespace gpureap::doctor {
namespace {

// An error older than this is history: still shown, no longer a warning.
constexpr auto kRecent = std::chrono::hours(24);
// The latest events a finding lists one by one; the rest are counted.
constexpr size_t kListed = 5;

Severity severity_of(core::KernelEventLevel l) {
  switch (l) {
    case core::KernelEventLevel::Critical:
      return Severity::Critical;
    case core::KernelEventLevel::Warning:
      return Severity::Warning;
    case core::KernelEventLevel::Info:
      break;
  }
  return Severity::Info;
}

// A record stamped later than it was read is not of this boot: never recent, never a process's.
bool of_another_boot(const core::KernelGpuEvent& e) {
  return e.stamp == core::KernelStamp::Future;
}

bool recent(const core::KernelGpuEvent& e, const core::Snapshot& s) {
  if (of_another_boot(e)) return false;
  return !e.time || s.timestamp - *e.time < kRecent;
}

// The live server of other processes' work (a backend's WorkServer) that `e` says hit a fault
// lately: every client's work fails with it.
const core::ProcessRow* faulted_server(const core::KernelGpuEvent& e, const core::Snapshot& s) {
  return recent(e, s) && severity_of(e.level) >= Severity::Warning ? server_hit(e, s) : nullptr;
}

// A time of the last day as its clock time, an older one with its date.
std::string clock_text(std::chrono::system_clock::time_point t, const core::Snapshot& s) {
  return s.timestamp - t < kRecent ? text::local_clock(t) : text::local_date_time(t);
}

std::string when(const core::KernelGpuEvent& e, const core::Snapshot& s) {
  if (!e.time) return fmt::format("{:.1f} s after boot", e.since_boot_usec / 1e6);
  if (of_another_boot(e))
    return fmt::format("{} (stamped later than the log was read: not this boot's)",
                       text::local_date_time(*e.time));
  return clock_text(*e.time, s);
}

std::string label(const core::KernelGpuEvent& e) {
  return e.code_text() + (e.name ? " (" + *e.name + ")" : std::string());
}

std::string pid_text(const core::KernelGpuEvent& e) {
  if (!e.pid) return "";
  return fmt::format(", PID {}{}", *e.pid, e.process_name ? " (" + *e.process_name + ")" : "");
}

std::string labels(const core::Snapshot& s, const std::vector<pid_t>& pids) {
  std::string out;
  for (pid_t pid : pids) {
    const auto* p = s.find(pid);
    out += (out.empty() ? "" : ", ") + (p ? process_label(*p) : "PID " + std::to_string(pid));
  }
  return out;
}

// Whether the process now at an error's PID is the one the driver named. A PID is handed out
// again once its process is gone, so it names the process now at it only if that process was
// already running at the error's time (the kernel vouches for start times, not for a log's PID).
enum class Identity { Same, Reused, Unconfirmed };

Identity identity(const core::KernelGpuEvent& e, const core::Snapshot& s,
                  const core::HostProcess& p) {
  auto started = s.start_time(p.stat);
  if (!e.time || of_another_boot(e) || !started) return Identity::Unconfirmed;
  return *started <= *e.time ? Identity::Same : Identity::Reused;
}

// What the PID an error names is now: a ghost (with who keeps its memory), a listed process, a
// keeper of a ghost, another process that got the PID later, or gone and forgotten.
std::optional<std::string> story(const core::KernelGpuEvent& e, const core::Snapshot& s) {
  if (!e.pid) return std::nullopt;
  if (of_another_boot(e))
    return fmt::format(
        "the {} that names PID {} is stamped {}, later than the log was read: it is from "
        "another boot or forged, and is about no process running now",
        e.code_text(), *e.pid, text::local_date_time(*e.time));
  std::string hit = fmt::format("PID {} hit {} at {}", *e.pid, e.code_text(), when(e, s));
  if (const auto* g = s.ghost(*e.pid)) {
    // A gone process's start time went with it: the listing is the same PID, not proof that
    // it is the same process.
    const std::string unproven = fmt::format(
        "; whether the gone process is the one the {} names cannot be confirmed (its start time "
        "is gone with it)",
        e.kind_text());
    std::vector<pid_t> holders = g->keepers;
    holders.insert(holders.end(), g->listed_keepers.begin(), g->listed_keepers.end());
    if (!holders.empty())
      return fmt::format("{}; it is gone, and its memory ({}) is still held by {}{}", hit,
                         bytes_text(g->bytes), labels(s, holders), unproven);
    return fmt::format("{}; it is gone, and the driver still lists its memory ({}){}{}", hit,
                       bytes_text(g->bytes), g->leaked ? " with nothing alive holding it" : "",
                       unproven);
  }
  if (const auto* p = s.find(*e.pid)) {
    switch (identity(e, s, *p)) {
      case Identity::Reused:
        return fmt::format(
            "{}; the process now at {} started later, at {}: the PID was reused, and the {} is "
            "not about that process",
            hit, process_label(*p), clock_text(*s.start_time(p->stat), s), e.kind_text());
      case Identity::Unconfirmed:
        return fmt::format(
            "{}; whether that was the process now at {} cannot be confirmed: {} is unknown", hit,
            process_label(*p),
            e.time ? "its start time" : "the " + e.kind_text() + "'s clock time");
      case Identity::Same:
        break;
    }
  }
  for (const auto& g : s.ghosts)
    if (std::find(g.keepers.begin(), g.keepers.end(), *e.pid) != g.keepers.end())
      return fmt::format("{}; it keeps the memory of gone PID {} alive", hit, g.pid);
  if (const auto* r = s.row(*e.pid); r && r->process && r->listed_by_driver)
    return fmt::format("{}; it still runs and the driver lists it", hit);
  return std::nullopt;
}

// One finding per GPU (or per PCI address no backend reports).
void gpu_finding(const DoctorInput& in, const std::vector<const core::KernelGpuEvent*>& events,
                 std::vector<Finding>& out) {
  const auto& s = in.last;
  const auto& newest = *events.back();
  Finding f{FindingCode::GpuKernelError, Severity::Info};
  std::string where =
      newest.gpu ? fmt::format("GPU {}", *newest.gpu)
                 : fmt::format("the GPU at PCI {} (no backend reports it)", newest.pci_address);
  if (newest.gpu) f.gpus.push_back(*newest.gpu);
  std::set<unsigned> codes, this_boot_codes;
  size_t other_boot = 0;
  bool any_recent = false;
  for (const auto* e : events) {
    codes.insert(e->code);
    if (of_another_boot(*e))
      ++other_boot;
    else
      this_boot_codes.insert(e->code);
    if (recent(*e, s)) {
      any_recent = true;
      f.severity = std::max(f.severity, severity_of(e->level));
    }
    // A PID handed to another process since is not this finding's: `top` shows a process
    // the findings that name it.
    const auto* now = e->pid ? s.find(*e->pid) : nullptr;
    if (e->pid && !of_another_boot(*e) &&
        std::find(f.pids.begin(), f.pids.end(), *e->pid) == f.pids.end() &&
        !(now && identity(*e, s, *now) == Identity::Reused))
      f.pids.push_back(*e->pid);
  }
  std::string codes_text;
  for (unsigned c : codes) codes_text += (codes_text.empty() ? "" : ", ") + std::to_string(c);
  const std::string& kind = newest.kind_text();  // one GPU's errors are its vendor's
  f.evidence.push_back(fmt::format("the kernel log has {} {} error{} of {} since boot ({} {})",
                                   events.size(), kind, events.size() == 1 ? "" : "s", where, kind,
                                   codes_text));
  size_t first = events.size() > kListed ? events.size() - kListed : 0;
  if (first > 0) f.evidence.push_back(fmt::format("the latest {}:", kListed));
  for (size_t i = first; i < events.size(); ++i) {
    const auto& e = *events[i];
    f.evidence.push_back(fmt::format("{} at {}{}{}", label(e), when(e, s), pid_text(e),
                                     e.detail.empty() ? "" : ": " + e.detail));
  }
  std::set<pid_t> told;
  bool ghost_named = false;
  for (auto it = events.rbegin(); it != events.rend(); ++it)
    if ((*it)->pid && told.insert(*(*it)->pid).second)
      if (auto line = story(**it, s)) {
        f.evidence.push_back(*line);
        ghost_named = ghost_named || (!of_another_boot(**it) && s.ghost(*(*it)->pid));
      }
  if (other_boot > 0)
    f.evidence.push_back(fmt::format(
        "{} of them {} stamped later than the log was read: not of this boot (a saved log of "
        "another boot, or forged), so {} nothing here",
        other_boot, other_boot == 1 ? "is" : "are",
        other_boot == 1 ? "it decides" : "they decide"));
  if (!any_recent)
    f.evidence.push_back("none in the last 24 hours: the GPU may have recovered since");
  // The catalogue of the vendor whose parser gave these events (its registry entry).
  const kernel::KernelLogParser* parser = nullptr;
  for (const auto& e : in.backends ? *in.backends : backend::builtin_backends())
    if (e.kernel_log && e.vendor == newest.vendor && e.kernel_log->kind == newest.kind)
      parser = &*e.kernel_log;
  for (unsigned c : codes) {
    auto entry = parser && parser->describe ? parser->describe(c) : std::nullopt;
    if (entry) {
      f.explanation += fmt::format("{}{} {}, {}: {}.", f.explanation.empty() ? "" : " ", kind, c,
                                   entry->name, entry->cause);
      if (this_boot_codes.count(c))
        f.remedy.push_back(step(f.remedy.empty() ? StepKind::Run : StepKind::Then,
                                fmt::format("{}   # {} {}", entry->action, kind, c)));
    } else {
      f.explanation += fmt::format(
          "{}{} {} is not in gpureap's catalog{}.", f.explanation.empty() ? "" : " ", kind, c,
          parser && !parser->reference.empty() ? ": see " + parser->reference : std::string());
    }
  }
  auto next = [&] { return f.remedy.empty() ? StepKind::Run : StepKind::Then; };
  if (ghost_named)
    f.remedy.push_back({next(), "gpureap kill --ghosts", "frees what the gone process left"});
  if (parser && !parser->full_messages.empty())
    f.remedy.push_back({next(), parser->full_messages, "shows the full messages"});
  f.summary = fmt::format("{}: {} {} error{} in the kernel log ({} {})", where, events.size(), kind,
                          events.size() == 1 ? "" : "s", kind, codes_text);
  // The newest recent fault of a server of other processes' work (a WorkServer) names the
  // problem: every client's work fails with it.
  for (auto it = events.rbegin(); it != events.rend(); ++it)
    if (const auto* server = faulted_server(**it, s)) {
      server_fault(in, **it, *server, f);
      break;
    }
  out.push_back(std::move(f));
}

}  // namespace

bool wants_work_server_log(const DoctorInput& in) {
  if (!in.kernel) return false;
  for (const auto& e : in.kernel->events)
    if (faulted_server(e, in.last)) return true;
  return false;
}

void kernel_rules(const DoctorInput& in, std::vector<Finding>& out) {
  if (!in.kernel) return;
  std::map<std::string, std::vector<const core::KernelGpuEvent*>> by_gpu;
  for (const auto& e : in.kernel->events) {
    if (in.gpu && e.gpu != in.gpu) continue;
    by_gpu[e.gpu ? fmt::format("{:08}", *e.gpu) : "pci " + e.pci_address].push_back(&e);
  }
  for (const auto& [key, events] : by_gpu) gpu_finding(in, events, out);
}

}  // namespace gpureap::doctor

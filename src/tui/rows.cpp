#include "tui/rows.h"

#include <unistd.h>

#include <algorithm>

#include "core/gpu_place.h"
#include "output/process_figures.h"
#include "output/ps_view.h"
#include "text/byte_format.h"
#include "text/escape.h"
#include "text/time_format.h"

namespace gpureap::tui {
namespace {

std::string container_text(const core::HostProcess* p) {
  if (!p || !p->details || !p->details->container) return "-";
  return text::terminal_safe(p->details->container->display_name());
}

void fill_process(TopRow& r, const core::Snapshot& s, const core::HostProcess& p, const Viewer& v) {
  r.ppid = p.stat.ppid;
  r.pgid = p.stat.pgid;
  r.state = p.stat.state;
  r.stuck = p.stat.is_stopped() || p.stat.state == 'D';
  if (p.details) {
    if (p.details->user)
      r.user = text::terminal_safe(*p.details->user);
    else if (p.details->uid)
      r.user = std::to_string(*p.details->uid);
    r.uid = p.details->uid;
  }
  if (auto start = s.start_time(p.stat); start && s.timestamp >= *start)
    r.age = std::chrono::duration_cast<std::chrono::seconds>(s.timestamp - *start);
  r.container = container_text(&p);
  auto figures = output::process_figures(s, p);
  r.cpu_percent = figures.cpu_percent;
  r.rss = figures.rss_bytes;
  r.cpu = figures.cpu;
  // The reaper refuses another user's process unless gpureap runs as root.
  r.actionable = v.privileged() || !r.uid || *r.uid == v.uid || *r.uid == v.euid;
}

}  // namespace

Viewer Viewer::current() {
  return Viewer{::getuid(), ::geteuid()};
}

std::string TopRow::state_text() const {
  return gone ? "gone" : output::state_word(state);
}

std::string TopRow::gpu_text() const {
  std::string out;
  for (size_t i = 0; i < gpus.size(); ++i) {
    auto gi = i < gpu_instances.size() ? gpu_instances[i] : std::nullopt;
    out += (out.empty() ? "" : ",") + core::gpu_place_text(gpus[i], gi);
  }
  return out.empty() ? "-" : out;
}

std::string TopRow::memory_text() const {
  if (gpus.empty()) return "-";
  if (!memory) return "n/a";
  return text::human_bytes(*memory) + (memory_partial ? "+?" : "");
}

std::string TopRow::sm_text() const {
  return sm ? std::to_string(*sm) : "-";
}

std::string TopRow::age_text() const {
  return age ? text::human_age(*age) : "-";
}

std::string TopRow::cpu_text() const {
  return output::cpu_percent_text(cpu_percent);
}

std::string TopRow::rss_text() const {
  return output::rss_text(rss);
}

std::string TopRow::time_text() const {
  return output::cpu_time_text(cpu);
}

TopRow make_row(const core::Snapshot& s, const core::ProcessRow& row, const Viewer& v) {
  TopRow r;
  r.pid = row.pid;
  r.user = "-";
  r.gone = !row.process.has_value();
  if (row.process)
    fill_process(r, s, *row.process, v);
  else
    r.container = "-";
  uint64_t sum = 0;
  bool known = false;
  for (const auto& u : row.gpus) {
    if (std::find(r.gpus.begin(), r.gpus.end(), u.index) == r.gpus.end()) {
      r.gpus.push_back(u.index);
      r.gpu_instances.push_back(core::row_instance(s, row, u.index));
    }
    if (u.used_bytes) {
      sum += *u.used_bytes;
      known = true;
    } else {
      r.memory_partial = true;
    }
    if (u.sm_utilization_percent) r.sm = std::max(r.sm.value_or(0), *u.sm_utilization_percent);
  }
  if (known)
    r.memory = sum;
  else
    r.memory_partial = false;
  r.on_gpus = core::gpus_of(s, row);
  r.command = output::command_text(row);
  r.command_line = output::command_line(row);
  for (auto a : row.anomalies)
    r.anomalies += (r.anomalies.empty() ? "" : " ") + std::string(core::to_string(a));
  r.ghost = row.is_ghost();
  r.anomalous = !row.anomalies.empty();
  return r;
}

TopRow make_context_row(const core::Snapshot& s, const core::HostProcess& p, const Viewer& v) {
  TopRow r;
  r.pid = p.stat.pid;
  r.context = true;
  r.user = "-";
  fill_process(r, s, p, v);
  r.stuck = false;  // not a holder: nothing of the GPU's is stuck in it
  core::ProcessRow as_row;
  as_row.pid = p.stat.pid;
  as_row.process = p;
  r.command = output::command_text(as_row);
  r.command_line = output::command_line(as_row);
  return r;
}

std::vector<TopRow> make_rows(const core::Snapshot& s, const Viewer& v) {
  std::vector<TopRow> out;
  out.reserve(s.rows.size());
  for (const auto& row : s.rows) out.push_back(make_row(s, row, v));
  return out;
}

}  // namespace gpureap::tui

#include "report/run_page.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "core/duration.h"
#include "report/incident.h"
#include "supervise/report_text.h"

namespace gpureap::report {
namespace {

// Every line of the stderr summary, without its "gpureap: " prefix: the page says what the
// terminal said.
std::vector<std::string> summary_lines(const supervise::RunReport& r) {
  std::vector<std::string> out;
  const std::string text = supervise::render_summary(r);
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    if (line.rfind("gpureap: ", 0) == 0) line.erase(0, 9);
    if (!line.empty()) out.push_back(line);
    start = end + 1;
  }
  return out;
}

std::vector<Marker> job_markers(const supervise::RunReport& r) {
  std::vector<Marker> out;
  const TimePoint exited = r.started_at + r.runtime;
  out.push_back(
      {exited, MarkerKind::JobEnd, "the command exited after " + core::format_duration(r.runtime)});
  const TimePoint torn_down = exited + r.teardown;
  std::string what = "teardown done";
  if (r.teardown_error)
    what = "teardown not verified: the job's processes could not be read";
  else if (!r.leftovers.empty())
    what += ": " + std::to_string(r.leftovers.size()) + " leftover process" +
            (r.leftovers.size() == 1 ? "" : "es") + " ended";
  out.push_back({torn_down, MarkerKind::Teardown, what});
  if (r.release.performed && r.release.released && r.release.took)
    out.push_back(
        {torn_down + *r.release.took, MarkerKind::Release,
         "GPU memory released " + core::format_duration(*r.release.took) + " after teardown"});
  return out;
}

// The job's lanes, as `run` saw them: the command from its start to its exit, each leftover
// from the job's start (run records no start of its own for them) to the end of the teardown,
// with the signals the teardown sent, and the memory coming back.
Timeline job_timeline(const supervise::RunReport& r, TimePoint to) {
  Timeline t;
  const TimePoint exited = r.started_at + r.runtime;
  const TimePoint torn_down = exited + r.teardown;
  const std::string by = "`gpureap run` (its teardown)";
  if (r.pid) {
    Lane lane;
    lane.pid = *r.pid;
    lane.label = std::to_string(*r.pid) + " " + supervise::command_text(r.command, 50);
    lane.spans.push_back({r.started_at, exited, SpanKind::Alive});
    lane.marks.push_back({exited, history::JournalEventKind::Exit,
                          "the command exited after " + core::format_duration(r.runtime)});
    lane.title = lane.label + ": the job's command, " + utc_time(r.started_at, true) + " to " +
                 utc_time(exited, true);
    t.lanes.push_back(std::move(lane));
  }
  for (const auto& l : r.leftovers) {
    Lane lane;
    lane.pid = l.pid;
    lane.label = std::to_string(l.pid) + " " + (l.comm.empty() ? "?" : l.comm);
    const TimePoint end = l.ended ? torn_down : to;
    lane.spans.push_back({r.started_at, std::max(r.started_at, end), SpanKind::Alive});
    lane.still_open = !l.ended;
    std::string sent;
    for (int sig : l.signals) {
      const char* name = sigabbrev_np(sig);
      sent += (sent.empty() ? "" : ", ") + (name ? "SIG" + std::string(name) : std::to_string(sig));
    }
    if (!sent.empty())
      lane.marks.push_back({exited, history::JournalEventKind::Signal,
                            sent + " to PID " + std::to_string(l.pid) + " by " + by + " at " +
                                utc_time(exited, true)});
    if (l.ended)
      lane.marks.push_back(
          {torn_down, history::JournalEventKind::Exit,
           "PID " + std::to_string(l.pid) + " ended by " + utc_time(torn_down, true)});
    lane.title = lane.label + ": left by the job when its command exited" +
                 (l.devices.empty() ? std::string() : ", holding " + l.devices.front()) +
                 (l.ended ? "; ended by the teardown" : "; still alive");
    t.lanes.push_back(std::move(lane));
  }
  if (r.release.performed && r.release.released && r.release.took)
    t.gpu_marks.push_back({torn_down + *r.release.took, history::JournalEventKind::MemoryBack,
                           "the GPU memory came back " + core::format_duration(*r.release.took) +
                               " after the teardown"});
  return t;
}

}  // namespace

Page build_run_page(const supervise::RunReport& r, TimePoint generated) {
  Page page;
  page.generated = generated;
  page.has_ghost_table = false;
  page.title = "gpureap run: " + supervise::command_text(r.command, 70);
  page.from = r.started_at;
  page.to = std::max(r.ended_at, r.started_at + r.runtime + r.teardown);
  page.notes = summary_lines(r);
  const auto markers = job_markers(r);
  std::map<unsigned, GpuChart> charts;
  for (const auto& p : r.gpu.timeline) {
    page.to = std::max(page.to, p.at);
    auto [it, added] = charts.try_emplace(p.gpu);
    GpuChart& c = it->second;
    if (added) {
      c.gpu = p.gpu;
      c.title = "GPU " + std::to_string(p.gpu);
      for (const auto& peak : r.gpu.peaks)
        if (peak.index == p.gpu)
          c.title = gpu_heading(p.gpu, peak.name.value_or(""), peak.uuid.value_or(""));
      c.scale_to_data = true;
      c.bands = {{BandKind::Process, "job", "the job's processes", {}},
                 {BandKind::Other, "other", "other processes on the GPU", {}}};
      c.gap = std::max(std::chrono::milliseconds(3000), 3 * r.gpu.interval);
      c.markers = markers;
    }
    if (p.total_bytes) c.total_bytes = p.total_bytes;
    c.times.push_back(p.at);
    // The driver's used memory is the stack's top, also where the job's listed memory is more.
    const uint64_t used = p.used_bytes.value_or(p.job_bytes);
    c.bands[0].bytes.push_back(std::min(p.job_bytes, used));
    c.bands[1].bytes.push_back(used - c.bands[0].bytes.back());
  }
  page.subtitle = "started " + utc_time(r.started_at) + " (UTC)";
  for (auto& [_, c] : charts) {
    // The job's lanes under the charts of the GPUs it used.
    const unsigned gpu = c.gpu;  // a structured binding cannot be captured before C++20's DR
    if (std::any_of(r.gpu.peaks.begin(), r.gpu.peaks.end(),
                    [gpu](const supervise::GpuPeak& p) { return p.index == gpu; }))
      c.timeline = job_timeline(r, page.to);
    page.gpus.push_back(std::move(c));
  }
  if (page.gpus.empty())
    page.notes.push_back(r.gpu.available ? "No GPU was sampled while the job ran."
                                         : "No GPU driver answered while the job ran.");
  return page;
}

}  // namespace gpureap::report

#pragma once
// A report page as plain data: per GPU, memory over time as stacked bands with the capacity
// and the moments that explain it (policy actions, kills, releases, a job's end), and the
// ghosts seen in the window. Built from the daemon's history (history_page.h) or from one
// `gpureap run` job (run_page.h); drawn by svg_chart.h and html_page.h, which know nothing of
// where the numbers came from.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "history/journal.h"

namespace gpureap::report {

using TimePoint = std::chrono::system_clock::time_point;

// What a band's memory is; the drawing gives each kind its own colour and pattern.
enum class BandKind { Process, Other, Ghost, Unattributed };

struct Band {
  BandKind kind = BandKind::Process;
  std::string id;     // stable, for the page's structure: "pid-4242", "other", "ghost", ...
  std::string label;  // untrusted (a process name): escaped where it is drawn
  std::vector<uint64_t> bytes;  // one per GpuChart::times; 0 where the band holds nothing
};

enum class MarkerKind {
  PolicyAction,  // a policy's decision or a notify
  Kill,          // a policy ended processes
  Release,       // the kernel reported the final close of a GPU file: the driver freed it
  GpuError,      // a driver error reported by the kernel (filled by kernel evidence)
  JobEnd,        // `run`: the command exited
  Teardown,      // `run`: the job's last leftover is gone
};
const char* to_string(MarkerKind kind);

// "2023-11-14 22:53:21" (UTC, as every time on a page), with tenths of a second when asked:
// a kill and the final close it caused are often a second apart.
std::string utc_time(TimePoint t, bool tenths = false);

struct Marker {
  TimePoint at;
  MarkerKind kind = MarkerKind::PolicyAction;
  std::string text;  // untrusted parts included: escaped where it is drawn
};

// The timeline under a GPU's chart, on the same time axis: a lane per process that held the
// GPU, from its first open (or the fork that gave it its parent's files) to its final close.
enum class SpanKind { Alive, Stopped, Ghost };
struct LaneSpan {
  TimePoint from, to;
  SpanKind kind = SpanKind::Alive;
};
struct LaneMark {
  TimePoint at;
  history::JournalEventKind kind = history::JournalEventKind::Fork;
  std::string text;  // the hover's words (untrusted parts included)
};
struct Lane {
  pid_t pid = 0;
  std::string label;  // "4242 python (alice)": untrusted
  std::string title;  // the hover over the whole lane
  std::vector<LaneSpan> spans;
  std::vector<LaneMark> marks;
  bool leaked = false;
  bool stopped_now = false;
  bool still_open = false;  // holds the GPU at the window's end
};
struct Timeline {
  std::vector<Lane> lanes;
  std::vector<LaneMark> gpu_marks;  // not one process's: a reset, a GPU error naming none
  size_t lanes_left_out = 0;        // beyond the page's bound
};

struct GpuChart {
  unsigned gpu = 0;
  std::string title;  // "GPU 0", with its UUID or name when known (untrusted)
  // A GPU split into instances, as the daemon's incident says it is now: "Split into
  // instances now: 0/3 <kind> 3g.40gb, ...". Empty for a whole GPU. Untrusted labels.
  std::string split;
  std::optional<uint64_t> total_bytes;
  std::vector<TimePoint> times;  // the samples, oldest first
  // Bottom to top. A gap in the samples (the daemon was down) breaks every band there.
  std::vector<Band> bands;
  std::vector<Marker> markers;  // in time order
  // Samples farther apart than this are a gap, not a slope.
  std::chrono::milliseconds gap{std::chrono::seconds(30)};
  Timeline timeline;  // empty: nothing followed who held the GPU (an older daemon's history)
  // The y-axis runs to the data's top; the GPU's total is marked where it is, or named at the
  // top when it is far above.
  bool scale_to_data = false;
  // Drawn even when no process used it: a fleet's chart, whose flat line is the news, never
  // a GPU's "no process used it".
  bool draw_when_idle = false;
};

enum class GhostEnding { KilledByPolicy, ReleasedOnItsOwn, StillHeld, EndedByCommand };
const char* to_string(GhostEnding ending);

struct GhostRow {
  pid_t pid = 0;
  unsigned gpu = 0;
  std::string comm;                  // the name the driver last gave (untrusted)
  std::vector<std::string> keepers;  // "4250 python" (untrusted names)
  uint64_t peak_bytes = 0;
  TimePoint first_seen, last_seen;  // within the window
  GhostEnding ending = GhostEnding::StillHeld;
  std::string ending_detail;  // the policy, the release time, ...
};

// The box at the top: each GPU's state now and each problem with the command that fixes it.
struct NowGpu {
  unsigned gpu = 0;
  std::string heading;  // "GPU 0 · <its name>" (untrusted name)
  std::string state;    // attributed, ghost, leaked, unattributed, idle
  std::string detail;   // "12.0 GiB used of 80.0 GiB: 8.0 GiB ghost (1 keeper)"
  // A split GPU's instances, each "0/3 <kind> 3g.40gb: 8.0 GiB used of 40.0 GiB" (untrusted label).
  std::vector<std::string> instances;
};
struct NowProblem {
  std::string severity;  // critical, warning
  std::string summary;   // untrusted parts included
  std::string command;   // doctor's remedy
};
struct NowBox {
  TimePoint at;
  std::vector<NowGpu> gpus;
  std::vector<NowProblem> problems;
};

// A table that leads the page, before the charts (the cluster page's nodes with problems).
// Every cell is untrusted text; a cell's lines are shown one under another.
struct LeadTable {
  std::string title;
  std::vector<std::string> headers;
  std::vector<std::vector<std::vector<std::string>>> rows;  // row, cell, line
  std::string note;                                         // under it: what it leaves out
};

struct Page {
  std::optional<NowBox> now;  // empty: the source said nothing of the state now
  std::string title;          // untrusted (a host name, a command)
  std::string subtitle;       // untrusted
  TimePoint from, to;
  std::vector<GpuChart> gpus;
  // Drawn first, with the charts beside it where the page is wide enough.
  std::optional<LeadTable> lead;
  bool has_ghost_table = true;  // a job's page has none
  std::vector<GhostRow> ghosts;
  // Facts worth a line under the title: a summary of the job, the audit log that could not
  // be read, the GPU whose history is empty.
  std::vector<std::string> notes;  // untrusted parts included
  TimePoint generated;
};

}  // namespace gpureap::report

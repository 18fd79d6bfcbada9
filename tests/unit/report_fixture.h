#pragma once
// A history of two GPUs built in memory for the report's tests: named processes, a hostile
// name, three ghosts that end in each of the three ways, an audit kill, a final close and an
// Xid event. GPU samples are derived from the tracks, as the daemon's would be.
#include <chrono>

#include "byte_units.h"
#include "report/history_page.h"

namespace gpureap::testing {

inline const auto kReportT0 =
    std::chrono::system_clock::time_point(std::chrono::seconds(1'700'000'000));
inline const std::string kHostileName = "<script>alert(\"x\")</script>'\x1b[31m";

inline report::TimePoint at_s(double seconds) {
  return kReportT0 + std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

inline history::ProcessTrack report_track(pid_t pid, uint64_t start, const std::string& comm,
                                          int first, int last, uint64_t gib,
                                          std::vector<history::Keeper> keepers = {}) {
  history::ProcessTrack t;
  t.key = {pid, start};
  t.gpu = 0;
  t.comm = comm;
  t.user = start ? "alice" : "unknown";
  t.first_seen = at_s(first);
  t.last_seen = at_s(last);
  t.points = {{at_s(first), gib * kGiB, std::nullopt}};
  t.keepers = std::move(keepers);
  return t;
}

// GPU 0, samples t0..t0+9: 100 trainer 10 GiB, 200 (hostile) 4 GiB, 300 small 1 GiB, 1 GiB
// unattributed; ghosts 7777 (1 GiB, t1-t2, released on its own), 4242 (8 GiB, t2-t5, its
// keeper killed by policy), 5151 (2 GiB, t6-t9, still held). GPU 1: idle, 2 GiB unattributed.
inline report::HistoryInput report_input() {
  report::HistoryInput in;
  in.hostname = "node<7>";
  in.since = kReportT0;
  in.history.interval = std::chrono::seconds(1);
  in.history.window = std::chrono::hours(1);
  auto& p = in.history.processes;
  p.push_back(report_track(100, 5000, "trainer", 0, 9, 10));
  p.push_back(report_track(200, 6000, kHostileName, 0, 9, 4));
  p.push_back(report_track(300, 7000, "small", 0, 9, 1));
  p.push_back(report_track(7777, 0, "early", 1, 2, 1, {{7778, "worker"}}));
  p.push_back(report_track(4242, 0, "gone-trainer", 2, 5, 8, {{4250, "python"}}));
  p.push_back(report_track(5151, 0, "stuck", 6, 9, 2, {{5152, "loader"}}));
  history::GpuSeries g0{0, "GPU-aaaa", 80 * kGiB, {}};
  history::GpuSeries g1{1, "GPU-bbbb", 80 * kGiB, {}};
  for (int s = 0; s < 10; ++s) {
    uint64_t live = 0, gone = 0;
    for (const auto& t : p)
      if (at_s(s) >= t.first_seen && at_s(s) <= t.last_seen)
        (t.key.start_ticks ? live : gone) += *t.points[0].used_bytes;
    g0.points.push_back({at_s(s), live + gone + kGiB, kGiB, gone, 50u, 3});
    g1.points.push_back({at_s(s), 2 * kGiB, 2 * kGiB, 0, 0u, 0});
  }
  in.history.gpus = {g0, g1};
  in.releases.push_back({"/dev/nvidia0", 7778, at_s(2.3)});
  audit::Record kill;
  kill.time = at_s(5.5);
  kill.event = "action";
  kill.policy = "reap-ghosts";
  kill.action = "terminate";
  kill.enforced = true;
  kill.outcome = "released";
  kill.process.pid = 4250;
  kill.process.comm = "python";
  kill.memory = {{0, 8 * kGiB}};
  kill.released_bytes = 8 * kGiB;
  in.audit.push_back(kill);
  in.events.push_back(
      {at_s(7), report::MarkerKind::GpuError, "Xid 79: GPU has fallen off the bus"});
  return in;
}

}  // namespace gpureap::testing

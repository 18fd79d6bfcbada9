// ScanLineage: what a daemon without events learns from one scan to the next. A holder's
// parent that a scan saw and the next did not ended, and the holder is its reparented child; a
// number another process has since is dated by that process's start, never later; a process
// that runs on, or a parent that is only the reaper it was handed to, records nothing.
#include <gtest/gtest.h>

#include "engine/scan_lineage.h"

namespace gpureap::engine {
namespace {

core::HostProcess process(pid_t pid, pid_t ppid, uint64_t start, bool holder, char state = 'S') {
  core::HostProcess p;
  p.stat.pid = pid;
  p.stat.ppid = ppid;
  p.stat.start_ticks = start;
  p.stat.state = state;
  if (holder) p.devices.push_back({"/dev/nvidia0", "nvidia-gpu", std::nullopt, true, {3}, {}});
  return p;
}

core::ProcView view_of(std::vector<core::HostProcess> processes) {
  core::ProcView v;
  std::sort(processes.begin(), processes.end(),
            [](const auto& a, const auto& b) { return a.stat.pid < b.stat.pid; });
  v.processes = std::move(processes);
  return v;
}

TEST(ScanLineage, AHoldersParentThatIsGoneAtTheNextScanEndedAndLeftItReparented) {
  ScanLineage lineage;
  // init (1), the trainer (100, holding), its worker (101, holding, its child).
  lineage.observe(
      view_of({process(1, 0, 1, false), process(100, 1, 50, true), process(101, 100, 60, true)}),
      70);
  EXPECT_TRUE(lineage.ends().empty());
  lineage.observe(view_of({process(1, 0, 1, false), process(101, 1, 60, true)}), 90);
  EXPECT_EQ(lineage.exited_parents(), (std::map<pid_t, pid_t>{{101, 100}}));
  EXPECT_EQ(lineage.ends(), (std::map<pid_t, std::vector<core::ProcessEnd>>{{100, {{50, 90}}}}));
  // The worker ends too: it is no one's reparented child any more.
  lineage.observe(view_of({process(1, 0, 1, false)}), 120);
  EXPECT_TRUE(lineage.exited_parents().empty());
  EXPECT_EQ(lineage.ends().at(101), (std::vector<core::ProcessEnd>{{60, 120}}));
}

TEST(ScanLineage, ANumberTakenByAnotherProcessEndedNoLaterThanThatProcessStarted) {
  ScanLineage lineage;
  lineage.observe(view_of({process(100, 1, 50, true), process(101, 100, 60, true)}), 70);
  // Between the scans the trainer ended and another process was handed its number at 75.
  lineage.observe(view_of({process(100, 1, 75, false), process(101, 1, 60, true)}), 90);
  EXPECT_EQ(lineage.ends().at(100), (std::vector<core::ProcessEnd>{{50, 75}}));
  EXPECT_EQ(lineage.exited_parents(), (std::map<pid_t, pid_t>{{101, 100}}));
}

TEST(ScanLineage, AZombieHasEndedAndIsRecordedOnce) {
  ScanLineage lineage;
  lineage.observe(view_of({process(100, 1, 50, true), process(101, 100, 60, true)}), 70);
  lineage.observe(view_of({process(100, 1, 50, false, 'Z'), process(101, 100, 60, true)}), 80);
  lineage.observe(view_of({process(101, 1, 60, true)}), 90);
  EXPECT_EQ(lineage.ends().at(100), (std::vector<core::ProcessEnd>{{50, 80}}));
  EXPECT_EQ(lineage.exited_parents(), (std::map<pid_t, pid_t>{{101, 100}}));
}

TEST(ScanLineage, ProcessesThatRunOnAndAReaperStartedAfterItsChildRecordNothing) {
  ScanLineage lineage;
  // 200 holds; its parent 300 started after it (a reaper it was handed to), and then ends.
  lineage.observe(view_of({process(200, 300, 50, true), process(300, 1, 80, false)}), 90);
  lineage.observe(view_of({process(200, 1, 50, true)}), 100);
  EXPECT_TRUE(lineage.exited_parents().empty());
  EXPECT_TRUE(lineage.ends().empty());
  // A holder that merely runs on, its parent too.
  ScanLineage quiet;
  const auto v = view_of({process(1, 0, 1, false), process(100, 1, 50, true)});
  quiet.observe(v, 60);
  quiet.observe(v, 70);
  EXPECT_TRUE(quiet.ends().empty());
  EXPECT_TRUE(quiet.exited_parents().empty());
}

}  // namespace
}  // namespace gpureap::engine

#include <gtest/gtest.h>

#include "core/gpu_place.h"
#include "snapshot_builders.h"
#include "tui/layout.h"
#include "tui/trend.h"
#include "tui/view.h"

namespace gpureap::tui {
namespace {

using namespace gpureap::testing;

// A trainer 300 died; its workers 301 and 302 (group 300, reparented to init) keep 8 GiB on
// GPU 0 alive. 400 (bob, under a shell 399) serves on GPU 1; 500 (carol) is stopped on GPU 0.
core::Snapshot ghost_scene() {
  auto w1 = owned(holder(301, 1, 300), 1000, "alice");
  auto w2 = owned(holder(302, 1, 300), 1000, "alice");
  auto shell = owned(proc(399, 1, 399), 1001, "bob");
  auto server = owned(holder(400, 399, 399, 1), 1001, "bob");
  server.stat.comm = "python";
  server.details->cmdline = {"python", "serve.py"};
  auto stopped = owned(holder(500, 1, 500, 0, 'T'), 1002, "carol");
  return make_snapshot({proc(1, 0, 1), w1, w2, shell, server, stopped},
                       {gpu(0, 0, 12 * GiB, {listed(300, 8 * GiB), listed(500, 4 * GiB)}),
                        gpu(1, 1, 20 * GiB, {listed(400, 20 * GiB)})});
}

std::vector<pid_t> pids(const std::vector<ViewRow>& v) {
  std::vector<pid_t> out;
  for (const auto& r : v) out.push_back(r.row.pid);
  return out;
}

const Viewer kRoot{0, 0};

TEST(TuiRows, CellsAndFlagsComeFromTheJoinedView) {
  auto s = ghost_scene();
  auto rows = make_rows(s, kRoot);
  ASSERT_EQ(rows.size(), 5u);
  const TopRow& ghost = rows[0];
  EXPECT_EQ(ghost.pid, 300);
  EXPECT_TRUE(ghost.gone);
  EXPECT_TRUE(ghost.ghost);
  EXPECT_EQ(ghost.state_text(), "gone");
  EXPECT_EQ(ghost.memory, 8 * GiB);
  EXPECT_EQ(ghost.memory_text(), "8.0 GiB");
  EXPECT_EQ(ghost.anomalies, "no-such-process");
  const TopRow& worker = rows[1];
  EXPECT_EQ(worker.user, "alice");
  EXPECT_EQ(worker.memory_text(), "-");
  EXPECT_NE(worker.anomalies.find("inherited-holder"), std::string::npos);
  const TopRow& stopped = rows[4];
  EXPECT_TRUE(stopped.stuck);
  EXPECT_EQ(stopped.state_text(), "stopped");
  EXPECT_EQ(rows[3].command, "python serve.py");
}

TEST(TuiRows, NonRootSeesWhatItCannotActOn) {
  auto s = ghost_scene();
  auto rows = make_rows(s, Viewer{1000, 1000});  // alice
  for (const auto& r : rows) {
    if (r.gone)
      EXPECT_TRUE(r.actionable);  // the reaper decides about its keepers
    else
      EXPECT_EQ(r.actionable, r.user == "alice") << r.pid;
  }
}

TEST(TuiView, SortsByAnyColumnBothWays) {
  auto s = ghost_scene();
  ViewOptions o;
  o.sort = {Column::Memory, true};
  EXPECT_EQ(pids(make_view(s, kRoot, o)), (std::vector<pid_t>{400, 300, 500, 301, 302}));
  o.sort = {Column::Memory, false};
  EXPECT_EQ(pids(make_view(s, kRoot, o)), (std::vector<pid_t>{301, 302, 500, 300, 400}));
  o.sort = {Column::Pid, false};
  EXPECT_EQ(pids(make_view(s, kRoot, o)), (std::vector<pid_t>{300, 301, 302, 400, 500}));
  o.sort = {Column::User, false};
  EXPECT_EQ(pids(make_view(s, kRoot, o)),
            (std::vector<pid_t>{300, 301, 302, 400, 500}));  // "-" < alice < bob < carol
  o.sort = {Column::Anomalies, true};  // ghosts first (most memory first), then stuck ones
  EXPECT_EQ(pids(make_view(s, kRoot, o)), (std::vector<pid_t>{300, 301, 302, 500, 400}));
  o.sort = {Column::State, false};
  EXPECT_EQ(pids(make_view(s, kRoot, o)).front(), 300);  // "gone" < "sleeping" < "stopped"
  for (Column c : kAllColumns) {
    o.sort = {c, true};
    EXPECT_EQ(make_view(s, kRoot, o).size(), 5u);
  }
}

TEST(TuiView, FiltersByTextGpuUserAndAnomalies) {
  auto s = ghost_scene();
  ViewOptions o;
  o.sort = {Column::Pid, false};
  o.filter.text = "SERVE";  // case-insensitive, in the command
  EXPECT_EQ(pids(make_view(s, kRoot, o)), std::vector<pid_t>{400});
  o.filter.text = "inherited";
  EXPECT_EQ(pids(make_view(s, kRoot, o)), (std::vector<pid_t>{301, 302}));
  o.filter.text = "500";
  EXPECT_EQ(pids(make_view(s, kRoot, o)), std::vector<pid_t>{500});
  o.filter = {};
  o.filter.gpu = 1;
  EXPECT_EQ(pids(make_view(s, kRoot, o)), std::vector<pid_t>{400});
  o.filter = {};
  o.filter.user = "alice";
  EXPECT_EQ(pids(make_view(s, kRoot, o)), (std::vector<pid_t>{301, 302}));
  o.filter = {};
  o.filter.anomalies_only = true;
  EXPECT_EQ(pids(make_view(s, kRoot, o)), (std::vector<pid_t>{300, 301, 302, 500}));
  o.filter.text = "nothing-like-this";
  EXPECT_TRUE(make_view(s, kRoot, o).empty());
  EXPECT_EQ(users_of(make_rows(s, kRoot)), (std::vector<std::string>{"alice", "bob", "carol"}));
  EXPECT_EQ(gpus_of(s, make_rows(s, kRoot)), (std::vector<unsigned>{0, 1}));
}

// `g` follows the one scope rule that `ps --gpu` and `kill --gpu` follow (core::in_place): the
// workers that keep the gone trainer's memory on GPU 0 are on GPU 0, though the driver lists
// them nowhere; the server on GPU 1 is not, though CUDA opens every GPU's file.
TEST(TuiView, GpuFilterKeepsAGhostsKeepersAsPsGpuDoes) {
  auto s = ghost_scene();
  ViewOptions o;
  o.sort = {Column::Pid, false};
  o.filter.gpu = 0;
  EXPECT_EQ(pids(make_view(s, kRoot, o)), (std::vector<pid_t>{300, 301, 302, 500}));
  for (const auto& row : s.rows) {
    const bool on_gpu0 = row.pid != 400;
    EXPECT_EQ(core::in_place(s, row, {0}), on_gpu0) << row.pid;
  }
  o.filter.gpu = 1;
  EXPECT_EQ(pids(make_view(s, kRoot, o)), std::vector<pid_t>{400});
  o.tree = true;  // the tree shows the same rows, the keepers under their ghost
  o.filter.gpu = 0;
  EXPECT_EQ(pids(make_view(s, kRoot, o)), (std::vector<pid_t>{300, 301, 302, 500}));
}

TEST(TuiView, TreePutsHoldersUnderParentsAndKeepersUnderTheirGhost) {
  auto s = ghost_scene();
  ViewOptions o;
  o.tree = true;
  o.sort = {Column::Pid, false};
  auto v = make_view(s, kRoot, o);
  EXPECT_EQ(pids(v), (std::vector<pid_t>{300, 301, 302, 399, 400, 500}));
  std::map<pid_t, const ViewRow*> by;
  for (const auto& r : v) by[r.row.pid] = &r;
  EXPECT_EQ(by[300]->depth, 0);
  EXPECT_EQ(by[301]->depth, 1);  // a worker under the dead trainer whose memory it keeps
  EXPECT_EQ(by[301]->prefix, "├─ ");
  EXPECT_EQ(by[302]->prefix, "└─ ");
  EXPECT_TRUE(by[399]->row.context);  // the shell is not a holder: shown for context
  EXPECT_EQ(by[400]->depth, 1);
  EXPECT_EQ(by[500]->depth, 0);
  EXPECT_FALSE(by[400]->row.context);

  // A filter keeps the ancestors of what matches.
  o.filter.text = "serve";
  EXPECT_EQ(pids(make_view(s, kRoot, o)), (std::vector<pid_t>{399, 400}));
  o.filter.text = "302";
  auto kept = make_view(s, kRoot, o);
  EXPECT_EQ(pids(kept), (std::vector<pid_t>{300, 302}));
  EXPECT_TRUE(kept[0].row.context);  // the ghost, for context
  o.filter = {};
  o.unicode = false;
  o.sort = {Column::Pid, true};  // siblings follow the sort
  auto ascii = make_view(s, kRoot, o);
  std::map<pid_t, std::string> pre;
  for (const auto& r : ascii) pre[r.row.pid] = r.prefix;
  EXPECT_EQ(pre[302], "|- ");
  EXPECT_EQ(pre[301], "`- ");
}

TEST(TuiView, DeepTreesIndentWithPipes) {
  auto s = make_snapshot(
      {proc(1, 0, 1), proc(10, 1, 10), proc(11, 10, 10), holder(12, 11, 10), holder(13, 10, 10)},
      {gpu(0, 0, 0, {})});
  ViewOptions o;
  o.tree = true;
  o.sort = {Column::Pid, false};
  auto v = make_view(s, kRoot, o);
  ASSERT_EQ(pids(v), (std::vector<pid_t>{10, 11, 12, 13}));
  EXPECT_EQ(v[1].prefix, "├─ ");
  EXPECT_EQ(v[2].prefix, "│  └─ ");
  EXPECT_EQ(v[3].prefix, "└─ ");
}

TEST(TuiLayout, At80x24EverythingFitsAndTheTableKeepsMostRows) {
  auto l = layout_screen(80, 24, 2, false);
  EXPECT_FALSE(l.too_small);
  EXPECT_EQ(l.gpu_lines, 2u);
  EXPECT_FALSE(l.more_gpus);
  EXPECT_EQ(l.footer_y, 23u);
  EXPECT_EQ(l.table_y + l.table_rows, l.footer_y);
  EXPECT_GE(l.table_rows, 14u);
  auto d = layout_screen(80, 24, 2, true);
  EXPECT_GE(d.table_rows, 3u);
  EXPECT_GE(d.detail_rows, 8u);
  EXPECT_EQ(d.detail_y + d.detail_rows, d.footer_y);

  // Eight GPUs on 24 lines: some are folded into "+N more", the table keeps room.
  auto many = layout_screen(80, 24, 8, false);
  EXPECT_TRUE(many.more_gpus);
  EXPECT_LT(many.gpu_lines, 8u);
  EXPECT_GE(many.table_rows, 10u);

  auto cols = layout_columns(80, {5, 3, 23, false});
  size_t sum = kMarkWidth;
  bool command = false, pid = false, memory = false, anomalies = false;
  for (const auto& c : cols) {
    sum += c.width + (c.column == Column::Command ? 0 : 1);
    command |= c.column == Column::Command;
    pid |= c.column == Column::Pid;
    memory |= c.column == Column::Memory;
    anomalies |= c.column == Column::Anomalies;
  }
  EXPECT_LE(sum, 80u);
  EXPECT_TRUE(command && pid && memory && anomalies);
  EXPECT_GE(cols.back().width, kMinCommandWidth);
}

TEST(TuiLayout, At200x60EveryColumnShows) {
  auto l = layout_screen(200, 60, 8, true);
  EXPECT_EQ(l.gpu_lines, 8u);
  EXPECT_FALSE(l.more_gpus);
  EXPECT_GE(l.table_rows, 20u);
  EXPECT_GE(l.detail_rows, 15u);
  EXPECT_EQ(l.detail_y + l.detail_rows, l.footer_y);
  auto cols = layout_columns(200, {8, 3, 23, true});
  EXPECT_EQ(cols.size(), std::size(kAllColumns));
  size_t sum = kMarkWidth;
  for (const auto& c : cols) sum += c.width + (c.column == Column::Command ? 0 : 1);
  EXPECT_EQ(sum, 200u);  // the command takes the rest
  auto no_containers = layout_columns(200, {8, 3, 23, false});
  EXPECT_EQ(no_containers.size(), std::size(kAllColumns) - 1);
}

TEST(TuiLayout, TooSmallIsSaidNotDrawn) {
  EXPECT_TRUE(layout_screen(30, 24, 1, false).too_small);
  EXPECT_TRUE(layout_screen(80, 5, 1, false).too_small);
  auto l = layout_screen(kMinWidth, kMinHeight, 4, false);
  EXPECT_FALSE(l.too_small);
  EXPECT_GE(l.table_rows, 1u);
  auto b = center_box(80, 24, 200, 100);
  EXPECT_LE(b.x + b.width, 80u);
  EXPECT_LE(b.y + b.height, 24u);
}

TEST(TuiTrend, SparklineBucketsTheLastMinutes) {
  using namespace std::chrono;
  SystemTime now(seconds(1'700'000'000));
  std::deque<std::pair<SystemTime, double>> samples = {
      {now - seconds(400), 1.0},  // outside the window
      {now - seconds(290), 0.0},
      {now - seconds(150), 0.5},
      {now - seconds(140), 1.0},
      {now, 1.0}};
  auto b = buckets(samples, now, seconds(300), 3);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0], 0.0);
  EXPECT_EQ(b[1], 1.0);  // the largest in the slice
  EXPECT_EQ(b[2], 1.0);
  EXPECT_EQ(sparkline({0.0, 0.5, 1.0, std::nullopt}, glyphs(true)), "▁▅█ ");
  EXPECT_EQ(sparkline({0.0, 1.0}, glyphs(false)), "_#");

  MemoryTrend t(seconds(60));
  auto s =
      make_snapshot({proc(1, 0, 1)}, {gpu(0, 0, 50 * GiB, {})}, {false, 0, now - seconds(120)});
  t.record(s);
  auto s2 = make_snapshot({proc(1, 0, 1)}, {gpu(0, 0, 100 * GiB, {})}, {false, 0, now});
  t.record(s2);
  EXPECT_EQ(t.samples(0), 1u);  // the old one fell out of the window
  EXPECT_EQ(t.sparkline(0, 4, now, glyphs(true)), "   █");
  EXPECT_EQ(t.sparkline(7, 3, now, glyphs(true)), "   ");
  // Utilisation has a history of its own, kept only where the driver reports it.
  EXPECT_FALSE(t.has_utilization(0));
  auto busy = gpu(0, 0, 100 * GiB, {});
  busy.utilization_percent = 100;
  auto idle = gpu(0, 0, 100 * GiB, {});
  idle.utilization_percent = 0;
  t.record(make_snapshot({proc(1, 0, 1)}, {idle}, {false, 0, now - seconds(50)}));
  t.record(make_snapshot({proc(1, 0, 1)}, {busy}, {false, 0, now}));
  EXPECT_TRUE(t.has_utilization(0));
  EXPECT_EQ(t.utilization_sparkline(0, 2, now, glyphs(true)), "▁█");
}

}  // namespace
}  // namespace gpureap::tui

// The ps screen (src/output/ps_view.cpp): the tree, the footer and the column widths over
// hand-built snapshots.
#include <gtest/gtest.h>

#include <sstream>

#include "output/ps_view.h"
#include "snapshot_builders.h"
#include "text/display_width.h"

namespace gpureap::output {
namespace {

using namespace gpureap::testing;

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(PsTree, ProcessesWhoseParentLinksFormACycleAreShownOnce) {
  // A hostile procfs: 500's parent is 501 and 501's is 500.
  auto s = make_snapshot(
      {proc(1, 0, 1), holder(500, 501, 500), holder(501, 500, 501), holder(600, 1, 600)}, {});
  auto text = render_process_table(s, Style(false), {true, std::nullopt});
  EXPECT_EQ(count(text, "p500"), 1u) << text;
  EXPECT_EQ(count(text, "p501"), 1u) << text;
  EXPECT_EQ(count(text, "p600"), 1u) << text;
}

TEST(PsFooter, EachGhostCaseNamesTheCommandThatHelps) {
  auto s = make_snapshot(
      {proc(1, 0, 1), holder(301, 1, 300)},
      {gpu(0, 0, 8 * GiB, {listed(300, 8 * GiB)}), gpu(1, 1, 4 * GiB, {listed(400, 4 * GiB)})});
  auto text = render_ps(s, Style(false), {});
  EXPECT_NE(text.find("8.0 GiB on GPU 0 is held by ghosts (1 process keeps it alive). `gpureap "
                      "doctor` explains; "
                      "`gpureap kill 300` frees it."),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("4.0 GiB on GPU 1 is leaked: the driver lists gone PID 400 and no process "
                      "holds it. Only a "
                      "GPU reset (or a reboot) frees it: `gpureap reset --gpu 1`."),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("kill --ghosts"), std::string::npos) << text;
}

TEST(PsFooter, ALeakWhoseResetAPausedJobBlocksSaysWhatDoctorSays) {
  // Gone 999 leaked 8 GiB on GPU 0, where job 300 is stopped with its own 2 GiB: doctor's reset
  // step says the paused job blocks it; the footer says the same, and never names a kill of it.
  auto s = make_snapshot({proc(1, 0, 1), holder(300, 1, 300, 0, 'T')},
                         {gpu(0, 0, 10 * GiB, {listed(999, 8 * GiB), listed(300, 2 * GiB)})});
  auto text = render_ps(s, Style(false), {});
  EXPECT_NE(text.find("Only a GPU reset (or a reboot) frees it: `gpureap reset --gpu 0` (reset is "
                      "blocked by paused PID 300; resume or end it first)."),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("kill 300"), std::string::npos) << text;
}

// The display column where `what` first starts in `line`.
size_t column_of(const std::string& line, const std::string& what) {
  size_t at = line.find(what);
  EXPECT_NE(at, std::string::npos) << what << " in: " << line;
  return at == std::string::npos ? 0 : text::text_width(line.substr(0, at));
}

// A rank of user 1000's job: its own GPU file, its launcher's group, its labels.
core::HostProcess ps_job_rank(pid_t pid, pid_t launcher, unsigned n) {
  auto p = owned(holder(pid, launcher, launcher, n), 1000, "alice");
  core::RankLabels l;
  l.local_rank = n;
  l.local_world_size = 4;
  p.details->rank_labels = l;
  return p;
}

TEST(PsFooter, AStalledJobsRanksAreMarkedAndTheGoneRankIsNamed) {
  // alice's job 500 lost rank 3; bob's holder 800 is fine.
  std::vector<core::HostProcess> ps{proc(1, 0, 1), owned(proc(500, 1, 500), 1000, "alice"),
                                    owned(proc(504, 500, 500, 'Z'), 1000, "alice"),
                                    owned(holder(800, 1, 800, 3), 1001, "bob")};
  std::vector<core::Gpu> gpus;
  for (unsigned n = 0; n < 3; ++n) {
    ps.push_back(ps_job_rank(static_cast<pid_t>(501 + n), 500, n));
    gpus.push_back(gpu(n, n, 32 * GiB, {listed(static_cast<pid_t>(501 + n), 32 * GiB)}));
  }
  gpus.push_back(gpu(3, 3, 8 * GiB, {listed(800, 8 * GiB)}));
  SnapshotOptions o;  // the daemon watched rank 3 (504) end, killed by SIGKILL
  o.rank_exits = {{500, 1500, 504, 1504, 3u, 1600, 9}};
  auto s = make_snapshot(ps, gpus, o);
  auto text = render_ps(s, Style(false), {true, std::nullopt});
  EXPECT_NE(text.find("rank 3 of job PID 500 (p500, user alice) exited with SIGKILL; ranks "
                      "0\u20132 still "
                      "hold 96 GiB on GPUs 0\u20132 and are probably waiting for it. `gpureap "
                      "doctor` explains; `gpureap kill --tree 500` ends the whole job."),
            std::string::npos)
      << text;
  // Each rank carries the anomaly, under its launcher; bob's process does not.
  std::istringstream lines(text);
  std::string line;
  size_t marked = 0;
  while (std::getline(lines, line)) {
    if (line.find("stalled-job") == std::string::npos) continue;
    ++marked;
    EXPECT_EQ(line.find("p800"), std::string::npos) << line;
  }
  EXPECT_EQ(marked, 3u) << text;
  // Shown only for bob's rows, alice's job is not bob's business.
  core::Snapshot bobs = s;
  std::erase_if(bobs.rows, [](const core::ProcessRow& r) { return r.pid != 800; });
  EXPECT_EQ(render_ps(bobs, Style(false), {}).find("rank 3"), std::string::npos);
}

TEST(PsTable, WideCharactersKeepTheColumnsAligned) {
  // A CJK user name and command take two terminal columns per character: counted as one, the
  // columns after them would shift right on the rows that hold them.
  auto wide = holder(600, 1, 600, 0, 'T');
  wide.details->user = "田中太郎";
  wide.details->cmdline = {"python", "训练.py"};
  auto plain = holder(601, 1, 601, 0, 'T');
  auto s = make_snapshot({proc(1, 0, 1), wide, plain}, {});
  std::istringstream table(render_process_table(s, Style(false), {false, std::nullopt}));
  std::string header, line;
  std::getline(table, header);
  size_t rows = 0;
  while (std::getline(table, line)) {
    if (line.find("60") != 0) continue;  // PID 600 and 601; not init
    ++rows;
    // Every column after the user name starts where its header does.
    EXPECT_EQ(column_of(line, "stopped"), column_of(header, "STATE")) << header << "\n" << line;
    EXPECT_EQ(column_of(line, line.find("python") != std::string::npos ? "python" : "p601"),
              column_of(header, "COMMAND"))
        << header << "\n"
        << line;
  }
  EXPECT_EQ(rows, 2u) << table.str();

  // Cut to a terminal's width, a wide command still fits it.
  const size_t width = column_of(header, "COMMAND") + 12;
  std::istringstream cut(render_process_table(s, Style(false), {false, width}));
  while (std::getline(cut, line)) EXPECT_LE(text::text_width(line), width) << line;
}

}  // namespace
}  // namespace gpureap::output

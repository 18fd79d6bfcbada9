// The kill plan and results as text (src/output/kill_view.cpp): at 80 columns every line fits,
// the command column stays (the reasons fold under their row first), the notes wrap at word
// boundaries; "Freed ... in" counts from the first signal, not from the question.
#include <gtest/gtest.h>

#include <sstream>

#include "output/kill_view.h"
#include "snapshot_builders.h"
#include "text/display_width.h"
#include "text_lines.h"

namespace gpureap::reap {
namespace {

using namespace gpureap::testing;

Target worker(pid_t pid, const std::string& script) {
  Target t;
  t.pid = pid;
  t.comm = "pt_data_worker";
  t.cmdline = {"/usr/bin/python3", "-u", "/opt/jobs/nightly/" + script, "--config",
               "/opt/jobs/nightly/configs/a-rather-long-experiment-config.yaml"};
  t.user = "a-long-user-name";
  t.uid = 1000;
  t.state = 'S';
  t.keeps = {4242};
  t.reasons = {{ReasonKind::InheritedHolder, 0u, 4242, std::nullopt},
               {ReasonKind::Ghost, 0u, std::nullopt, core::Anomaly::Orphan}};
  return t;
}

Plan ghost_plan() {
  Plan plan;
  plan.selection = "ghosts";
  plan.backend_available = true;
  plan.targets = {worker(4250, "train_resnet50.py"), worker(4251, "evaluate_bert_large.py")};
  GoneListing gone;
  gone.pid = 4242;
  gone.driver_name = "python3";
  gone.gpus = {core::GpuUse{0, 8 * GiB}};
  gone.keepers = {4250, 4251};
  plan.gone = {gone};
  plan.notes = {
      "PID 9999 is not a GPU holder and was not included; run `gpureap ps` to see "
      "which processes hold the GPUs before naming them"};
  return plan;
}

core::Snapshot incomplete_snapshot() {
  auto s = make_snapshot({proc(1, 0, 1)}, {});
  s.proc.uninspectable = 3;
  return s;
}

TEST(KillPlanText, At80ColumnsEveryLineFitsAndTheCommandStays) {
  auto s = incomplete_snapshot();
  ASSERT_FALSE(s.complete());
  KillSettings k;
  for (size_t width : {60u, 80u, 100u}) {
    auto text = output::render_plan(s, ghost_plan(), k, output::Style(false), width);
    auto lines = lines_of(text);
    for (const auto& l : lines) EXPECT_LE(text::text_width(l), width) << width << ": " << l;
    ASSERT_GE(lines.size(), 2u) << text;
    const std::string* head = nullptr;
    for (const auto& l : lines)
      if (l.starts_with("PID")) head = &l;
    ASSERT_NE(head, nullptr) << text;
    EXPECT_NE(head->find("COMMAND"), std::string::npos) << width << "\n" << text;
    // The two workers read apart: their scripts, not a common cut prefix (at 60 columns, by
    // the start of their names).
    EXPECT_NE(text.find(width >= 80 ? "python3 train_resnet50.py" : "python3 train_"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find(width >= 80 ? "python3 evaluate_bert" : "python3 evaluate_"),
              std::string::npos)
        << text;
    // The reasons are whole, under their row, when their column gave way.
    EXPECT_NE(text.find("inherited holder of gone PID 4242"), std::string::npos) << text;
    // Prose wraps at word boundaries: the note and the incomplete view are whole words.
    EXPECT_NE(text.find("CAP_SYS_PTRACE"), std::string::npos) << text;
    EXPECT_NE(text.find("`gpureap ps`"), std::string::npos) << text;
  }
  auto narrow = output::render_plan(s, ghost_plan(), k, output::Style(false), 80u);
  EXPECT_NE(narrow.find("why: inherited holder of gone PID 4242"), std::string::npos) << narrow;
  // Without a terminal nothing is cut or wrapped.
  auto piped = output::render_plan(s, ghost_plan(), k, output::Style(false), std::nullopt);
  EXPECT_EQ(piped.find("…"), std::string::npos) << piped;
  EXPECT_NE(piped.find("WHY"), std::string::npos) << piped;
  EXPECT_NE(piped.find("the view is incomplete, and holders may be missing from this plan: 3 "
                       "processes could not be inspected; run as root or grant CAP_SYS_PTRACE"),
            std::string::npos)
      << piped;
}

TEST(KillPlanText, ColourDoesNotChangeTheFit) {
  auto s = incomplete_snapshot();
  auto plain = output::render_plan(s, ghost_plan(), {}, output::Style(false), 80u);
  auto colored = output::render_plan(s, ghost_plan(), {}, output::Style(true), 80u);
  std::string stripped;
  for (size_t i = 0; i < colored.size(); ++i) {
    if (colored[i] == '\x1b') {
      while (i < colored.size() && colored[i] != 'm') ++i;
      continue;
    }
    stripped += colored[i];
  }
  EXPECT_EQ(stripped, plain);
}

TEST(KillResultsText, FreedCountsFromTheFirstSignal) {
  Plan plan = ghost_plan();
  Report r;
  r.freed = {{0, 8 * GiB, std::nullopt, std::nullopt}};
  auto t0 = std::chrono::system_clock::time_point(std::chrono::seconds(1'700'000'000));
  r.timing.started = t0;                                       // planning
  r.timing.signalled = t0 + std::chrono::seconds(30);          // the person answered y
  r.timing.verified = t0 + std::chrono::milliseconds(32'000);  // the memory was back
  r.timing.report = t0 + std::chrono::milliseconds(32'010);
  EXPECT_EQ(reclaim_time(r.timing), std::chrono::milliseconds(2000));
  auto text = output::render_results(plan, r, output::Style(false), 80u);
  EXPECT_NE(text.find("Freed GPU 0 8.0 GiB in 2.0 s."), std::string::npos) << text;
  // Not signalled (nothing to time from): from the start.
  Timing none;
  none.started = t0;
  none.report = t0 + std::chrono::milliseconds(150);
  EXPECT_EQ(reclaim_time(none), std::chrono::milliseconds(150));
}

}  // namespace
}  // namespace gpureap::reap

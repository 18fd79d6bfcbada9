#include <gtest/gtest.h>

#include <algorithm>

#include "snapshot_builders.h"
#include "text/display_width.h"
#include "tui/model.h"

namespace gpureap::tui {
namespace {

using text::ascii_only;

using namespace gpureap::testing;

std::shared_ptr<const core::Snapshot> scene(bool with_server = true) {
  std::vector<core::HostProcess> ps = {proc(1, 0, 1), owned(holder(301, 1, 300), 1000, "alice"),
                                       owned(holder(302, 1, 300), 1000, "alice"),
                                       owned(holder(500, 1, 500, 0, 'T'), 1002, "carol")};
  std::vector<core::DriverProcess> gpu1;
  if (with_server) {
    auto server = owned(holder(400, 1, 400, 1), 1001, "bob");
    server.stat.comm = "python";
    server.details->cmdline = {"python", "serve.py", "--port", "8000"};
    ps.push_back(server);
    gpu1.push_back(listed(400, 20 * GiB));
  }
  auto s = make_snapshot(ps, {gpu(0, 0, 13 * GiB, {listed(300, 8 * GiB), listed(500, 4 * GiB)}),
                              gpu(1, 1, 20 * GiB, gpu1)});
  return std::make_shared<const core::Snapshot>(std::move(s));
}

TopModel model(bool readonly = false, size_t w = 80, size_t h = 24, Viewer viewer = {0, 0}) {
  TopModel m(TopSettings{readonly, true, std::chrono::milliseconds(1000), viewer});
  m.set_size(w, h);
  m.set_snapshot(scene());
  return m;
}

Effect press(TopModel& m, char32_t c) {
  return m.handle(Key::chr(c));
}
Effect press(TopModel& m, Key::Kind k) {
  return m.handle(Key::of(k));
}

void type(TopModel& m, const std::string& text) {
  for (char c : text) press(m, static_cast<char32_t>(c));
}

// Every frame line fits the screen and the frame has exactly its height.
void expect_fits(const Frame& f) {
  EXPECT_EQ(f.lines.size(), f.height);
  for (size_t i = 0; i < f.lines.size(); ++i)
    EXPECT_LE(f.lines[i].width(), f.width) << "line " << i << ": " << f.lines[i].text();
}

const Line* line_with(const Frame& f, const std::string& needle) {
  for (const auto& l : f.lines)
    if (l.text().find(needle) != std::string::npos) return &l;
  return nullptr;
}

bool has_role(const Line& l, Role r) {
  for (const auto& s : l.spans)
    if (s.role == r && s.text.find_first_not_of(' ') != std::string::npos) return true;
  return false;
}

TEST(TuiModel, StartsOnTheBiggestHolderAndMovesWithTheKeys) {
  auto m = model();
  ASSERT_EQ(m.view().size(), 5u);
  EXPECT_EQ(m.selected(), 400);  // memory, largest first
  press(m, Key::Down);
  EXPECT_EQ(m.selected(), 300);
  press(m, Key::End);
  EXPECT_EQ(m.selected(), m.view().back().row.pid);
  press(m, Key::Home);
  EXPECT_EQ(m.selected(), 400);
  press(m, Key::Up);  // stays on the first row
  EXPECT_EQ(m.selected(), 400);
  press(m, Key::PageDown);
  EXPECT_EQ(m.selected(), m.view().back().row.pid);
}

TEST(TuiModel, TheMouseSelectsAndScrolls) {
  auto m = model();
  const auto& l = m.layout();
  m.handle({Key::Click, 0, l.table_y + 2});  // the third row
  EXPECT_EQ(m.selected(), m.view()[2].row.pid);
  m.handle({Key::Click, 0, l.header_y});  // not a row: nothing changes
  EXPECT_EQ(m.selected(), m.view()[2].row.pid);
  m.handle(Key::of(Key::WheelDown));
  EXPECT_EQ(m.selected(), m.view().back().row.pid);
  m.handle(Key::of(Key::WheelUp));
  EXPECT_EQ(m.selected(), m.view()[1].row.pid);
}

TEST(TuiModel, SelectionFollowsTheProcessAcrossRefreshesAndSorts) {
  auto m = model();
  press(m, Key::Down);
  ASSERT_EQ(m.selected(), 300);
  m.set_snapshot(scene(false));  // 400 exits; 300 moves up
  EXPECT_EQ(m.selected(), 300);
  press(m, U'P');  // by PID
  EXPECT_EQ(m.options().sort.column, Column::Pid);
  EXPECT_FALSE(m.options().sort.descending);
  EXPECT_EQ(m.selected(), 300);
  EXPECT_EQ(m.view().front().row.pid, 300);
  press(m, U'P');  // again: reversed
  EXPECT_TRUE(m.options().sort.descending);
  EXPECT_EQ(m.view().front().row.pid, 500);
  press(m, U'r');
  EXPECT_FALSE(m.options().sort.descending);
  press(m, U'>');
  EXPECT_EQ(m.options().sort.column, Column::User);
  press(m, U'<');
  EXPECT_EQ(m.options().sort.column, Column::Pid);
  press(m, Key::SortKey);  // F6, as in htop
  EXPECT_EQ(m.options().sort.column, Column::User);
}

TEST(TuiModel, SlashFiltersWhileTypingEnterKeepsEscClears) {
  auto m = model();
  press(m, U'/');
  EXPECT_EQ(m.mode(), Mode::FilterInput);
  type(m, "serv");
  EXPECT_EQ(m.view().size(), 1u);  // narrows as the user types
  EXPECT_EQ(m.selected(), 400);
  press(m, Key::Backspace);
  press(m, Key::Backspace);
  press(m, Key::Backspace);
  press(m, Key::Backspace);
  EXPECT_EQ(m.view().size(), 5u);
  type(m, "alice");
  EXPECT_EQ(m.view().size(), 2u);
  auto f = m.compose();
  EXPECT_NE(f.lines.back().text().find("Filter: alice"), std::string::npos)
      << f.lines.back().text();
  press(m, Key::Enter);
  EXPECT_EQ(m.mode(), Mode::Table);
  EXPECT_EQ(m.options().filter.text, "alice");
  EXPECT_EQ(m.view().size(), 2u);
  EXPECT_NE(line_with(m.compose(), "filter \"alice\""), nullptr);
  press(m, U'/');
  press(m, Key::Escape);
  EXPECT_TRUE(m.options().filter.text.empty());
  EXPECT_EQ(m.view().size(), 5u);
  // Keys typed into the filter are text, not commands.
  press(m, U'/');
  type(m, "qk");
  EXPECT_EQ(m.mode(), Mode::FilterInput);
  EXPECT_EQ(m.options().filter.text, "qk");
}

TEST(TuiModel, GpuUserAnomalyFiltersCycleAndClear) {
  auto m = model();
  press(m, U'g');
  EXPECT_EQ(m.options().filter.gpu, 0u);
  // 300 and 500 are listed on GPU 0; 301 and 302 keep 300's memory there (as `ps --gpu 0`).
  EXPECT_EQ(m.view().size(), 4u);
  press(m, U'g');
  EXPECT_EQ(m.options().filter.gpu, 1u);
  press(m, U'g');
  EXPECT_FALSE(m.options().filter.gpu);
  press(m, U'u');
  EXPECT_EQ(m.options().filter.user, "alice");
  press(m, U'u');
  EXPECT_EQ(m.options().filter.user, "bob");
  press(m, U'a');
  EXPECT_TRUE(m.view().empty());  // bob's server has no anomaly
  EXPECT_NE(line_with(m.compose(), "No row matches the filter"), nullptr);
  press(m, U'c');
  EXPECT_FALSE(m.options().filter.active());
  EXPECT_EQ(m.view().size(), 5u);
}

TEST(TuiModel, TreeModeNestsTheWorkersUnderTheirGhost) {
  auto m = model();
  press(m, U't');
  EXPECT_TRUE(m.options().tree);
  auto f = m.compose();
  const Line* w = line_with(f, "└─ ");
  ASSERT_NE(w, nullptr) << f.text();
  EXPECT_NE(w->text().find("302"), std::string::npos);
  press(m, U't');
  EXPECT_FALSE(m.options().tree);
}

TEST(TuiModel, KillPlansTheSelectionOrTheTaggedRows) {
  auto m = model();
  auto e = press(m, U'k');
  EXPECT_EQ(e.kind, Effect::PlanKill);
  EXPECT_EQ(e.pids, std::vector<pid_t>{400});
  press(m, Key::Down);  // 300
  press(m, U' ');       // tag 300, move on
  EXPECT_EQ(m.tags(), std::set<pid_t>{300});
  press(m, U' ');  // tag the next one
  EXPECT_EQ(m.tags().size(), 2u);
  e = m.handle(Key::of(Key::Kill));  // F9
  EXPECT_EQ(e.kind, Effect::PlanKill);
  EXPECT_EQ(e.pids.size(), 2u);
  EXPECT_TRUE(std::count(e.pids.begin(), e.pids.end(), 300));
  press(m, Key::Escape);  // untags
  EXPECT_TRUE(m.tags().empty());
}

TEST(TuiModel, PlanConfirmRunOutcome) {
  auto m = model();
  ASSERT_EQ(press(m, U'k').kind, Effect::PlanKill);
  m.show_plan({"Plan: 1 process to signal", "400 bob kill"}, 1);
  EXPECT_EQ(m.mode(), Mode::Plan);
  auto f = m.compose();
  expect_fits(f);
  EXPECT_NE(line_with(f, "Kill 1 process?"), nullptr) << f.text();
  EXPECT_NE(line_with(f, "y SIGTERM then SIGKILL · t SIGTERM · i SIGINT · 9 SIGKILL"), nullptr)
      << f.text();
  EXPECT_EQ(press(m, U'q').kind, Effect::None);  // q cancels a dialog, it does not quit
  EXPECT_EQ(m.mode(), Mode::Table);
  EXPECT_EQ(m.message(), "Nothing was signalled.");

  press(m, U'k');
  m.show_plan({"Plan"}, 1);
  EXPECT_EQ(press(m, U'y').kind, Effect::ExecuteKill);
  EXPECT_EQ(m.mode(), Mode::Running);
  EXPECT_EQ(m.kill_choice().signal, SIGTERM);
  EXPECT_TRUE(m.kill_choice().escalate);  // the reaper's escalation
  EXPECT_TRUE(m.kill_running());
  m.kill_progress("waiting for the GPU memory");
  EXPECT_NE(line_with(m.compose(), "waiting for the GPU memory"), nullptr);
  // q during a kill asks once more.
  EXPECT_EQ(press(m, U'q').kind, Effect::None);
  EXPECT_EQ(m.mode(), Mode::Table);
  EXPECT_NE(m.message().find("press q again"), std::string::npos);
  EXPECT_EQ(press(m, U'k').kind, Effect::None);  // one kill at a time
  m.show_outcome({"PID  OUTCOME   DETAIL", "400  released  exited on SIGTERM; 20.0 GiB released",
                  "Freed GPU 1 20.0 GiB in 0.4 s."},
                 true);
  EXPECT_EQ(m.mode(), Mode::Outcome);
  EXPECT_FALSE(m.kill_running());
  f = m.compose();
  EXPECT_NE(line_with(f, "Freed GPU 1 20.0 GiB"), nullptr);
  EXPECT_NE(line_with(f, "memory released"), nullptr);
  press(m, Key::Enter);
  EXPECT_EQ(m.mode(), Mode::Table);
  EXPECT_EQ(press(m, U'q').kind, Effect::Quit);
}

TEST(TuiModel, APlanWithNothingToSignalOnlyInforms) {
  auto m = model(false, 80, 24, Viewer{1000, 1000});
  press(m, U'k');
  m.show_plan({"400  bob  not permitted  owned by bob; only root or its owner may signal it"}, 0);
  EXPECT_EQ(press(m, U'y').kind, Effect::None);
  EXPECT_EQ(m.mode(), Mode::Plan);
  EXPECT_NE(line_with(m.compose(), "Nothing to signal"), nullptr);
  press(m, Key::Escape);
  EXPECT_EQ(m.mode(), Mode::Table);
}

TEST(TuiModel, ReadonlyRefusesEveryAction) {
  auto m = model(true);
  EXPECT_EQ(press(m, U'k').kind, Effect::None);
  EXPECT_EQ(m.handle(Key::of(Key::Kill)).kind, Effect::None);
  EXPECT_NE(m.message().find("read-only"), std::string::npos);
  auto f = m.compose();
  EXPECT_NE(f.lines[0].text().find("READ-ONLY"), std::string::npos);
  EXPECT_NE(line_with(f, "read-only (--readonly)"), nullptr);
}

TEST(TuiModel, QuitKeys) {
  auto m = model();
  EXPECT_EQ(press(m, U'q').kind, Effect::Quit);
  EXPECT_EQ(press(m, Key::Interrupt).kind, Effect::Quit);
  EXPECT_EQ(press(m, Key::Quit).kind, Effect::Quit);
  press(m, U'?');
  EXPECT_EQ(m.mode(), Mode::Help);
  EXPECT_EQ(press(m, Key::Interrupt).kind, Effect::Quit);  // Ctrl-C quits from anywhere
}

TEST(TuiModel, HelpListsTheKeys) {
  auto m = model();
  press(m, U'?');
  auto f = m.compose();
  expect_fits(f);
  EXPECT_NE(line_with(f, "sort by PID"), nullptr) << f.text();
  press(m, U'x');
  EXPECT_EQ(m.mode(), Mode::Table);
}

TEST(TuiModel, GhostAndStuckRowsAreHighlighted) {
  auto m = model();
  auto f = m.compose();
  const Line* ghost = line_with(f, " 300 ");
  ASSERT_NE(ghost, nullptr) << f.text();
  EXPECT_TRUE(has_role(*ghost, Role::Ghost));
  const Line* stuck = line_with(f, " 500 ");
  ASSERT_NE(stuck, nullptr);
  EXPECT_TRUE(has_role(*stuck, Role::Stuck));
  const Line* healthy = line_with(f, "serve.py");
  ASSERT_NE(healthy, nullptr);
  EXPECT_FALSE(has_role(*healthy, Role::Ghost));
  EXPECT_TRUE(healthy->spans.front().reverse);  // selected
  EXPECT_NE(line_with(f, "8.0 GiB on GPU 0 held by ghosts"), nullptr);
}

TEST(TuiModel, FrameAt80x24) {
  auto m = model(false, 80, 24);
  auto f = m.compose();
  expect_fits(f);
  EXPECT_NE(f.lines[0].text().find("gpureap top"), std::string::npos);
  EXPECT_NE(f.lines[1].text().find("Test GPU"), std::string::npos);
  EXPECT_TRUE(has_role(f.lines[1], Role::BarGhost));  // GPU 0's bar shows the ghost
  EXPECT_TRUE(has_role(f.lines[1], Role::BarAttributed));
  EXPECT_NE(f.lines[2].text().find("20G/100G"), std::string::npos) << f.lines[2].text();
  EXPECT_NE(f.lines[3].text().find("host"), std::string::npos);
  EXPECT_NE(line_with(f, "PID"), nullptr);
  EXPECT_NE(line_with(f, "MEMORY▼"), nullptr);
  EXPECT_NE(f.lines[23].text().find("q quit"), std::string::npos);
  EXPECT_NE(f.lines[23].text().find("1/5"), std::string::npos);
  // The detail pane: the process, then the doctor's findings.
  press(m, Key::Down);  // 300, the ghost
  press(m, Key::Enter);
  f = m.compose();
  expect_fits(f);
  EXPECT_NE(line_with(f, "PID 300"), nullptr) << f.text();
  EXPECT_NE(line_with(f, "no-such-process"), nullptr);
}

TEST(TuiModel, FrameAt200x60ShowsEverything) {
  auto m = model(false, 200, 60);
  auto f = m.compose();
  expect_fits(f);
  for (const char* col :
       {"PID", "USER", "GPU", "MEMORY", "SM%", "STATE", "AGE", "ANOMALIES", "COMMAND"})
    EXPECT_NE(line_with(f, col), nullptr) << col;
  EXPECT_NE(line_with(f, "python serve.py --port 8000"), nullptr);
  EXPECT_NE(line_with(f, "ghost 8.0G"), nullptr) << f.text();  // the memory split
  EXPECT_NE(line_with(f, "P U G M % X R T S A O N C"), nullptr);
  press(m, Key::Down);
  press(m, Key::Enter);
  f = m.compose();
  expect_fits(f);
  EXPECT_NE(line_with(f, "doctor"), nullptr);
  EXPECT_NE(line_with(f, "$ "), nullptr) << f.text();  // a remedy
}

TEST(TuiModel, ResizesAndSaysWhenTooSmall) {
  auto m = model();
  m.set_size(30, 6);
  auto f = m.compose();
  EXPECT_NE(f.text().find("needs 40x8"), std::string::npos);
  for (const auto& l : f.lines) EXPECT_LE(l.width(), 30u);
  m.set_size(100, 30);
  expect_fits(m.compose());
  // Scrolling keeps the selection on screen at any size.
  m.set_size(80, 9);
  press(m, Key::End);
  const auto& l = m.layout();
  EXPECT_GE(m.view().size() - 1, m.scroll());
  EXPECT_LT(m.view().size() - 1, m.scroll() + l.table_rows);
}

TEST(TuiModel, DriverNotAnsweringIsShown) {
  auto m = model();
  SamplingStatus st;
  st.driver_stuck = std::chrono::seconds(12);
  m.set_sampling(st);
  EXPECT_NE(line_with(m.compose(), "driver not answering for 12s"), nullptr);
  core::Snapshot down = *scene();
  down.drivers.backends.at(0).available = false;
  down.drivers.gpus.clear();
  down.drivers.backends.at(0).error_code = core::BackendErrorCode::NotAnswering;
  down.drivers.backends.at(0).error = "the GPU driver has not answered for 6 s";
  m.set_snapshot(std::make_shared<const core::Snapshot>(down));
  EXPECT_NE(line_with(m.compose(), "GPU driver not answering"), nullptr);
  expect_fits(m.compose());
}

TEST(TuiModel, NonRootRowsTheyCannotTouchAreDimAndSaidSo) {
  auto m = model(false, 120, 30, Viewer{1000, 1000});
  auto f = m.compose();
  EXPECT_NE(f.lines[0].text().find("not root"), std::string::npos);
  const Line* bob = line_with(f, "serve.py");
  ASSERT_NE(bob, nullptr);
  EXPECT_TRUE(has_role(*bob, Role::Dim));
  press(m, Key::Enter);  // 400 is selected
  EXPECT_NE(line_with(m.compose(), "you cannot signal it"), nullptr) << m.compose().text();
}

TEST(TuiModel, AsciiGlyphsWithoutUtf8) {
  TopModel m(TopSettings{false, false, std::chrono::milliseconds(1000), {0, 0}});
  m.set_size(100, 30);
  m.set_snapshot(scene());
  press(m, U't');
  auto f = m.compose();
  // Glyphs the model draws itself are plain ASCII (untrusted text is the terminal layer's).
  for (const auto& l : f.lines)
    for (const auto& s : l.spans)
      if (s.role == Role::BarAttributed || s.role == Role::BarFree || s.role == Role::BarGhost ||
          s.role == Role::Border) {
        EXPECT_EQ(ascii_only(s.text), s.text) << s.text;
      }
  EXPECT_NE(line_with(f, "`- "), nullptr) << f.text();
}

}  // namespace
}  // namespace gpureap::tui

namespace gpureap::tui {
namespace {

TEST(TuiModelKeys, HelpScrollsAt80x24ToItsLegend) {
  auto m = model(false, 80, 24);
  press(m, Key::Help);  // F1
  ASSERT_EQ(m.mode(), Mode::Help);
  auto f = m.compose();
  expect_fits(f);
  ASSERT_EQ(line_with(f, "Memory bar"), nullptr) << "the help fits: nothing to scroll\n"
                                                 << f.text();
  press(m, Key::End);
  EXPECT_EQ(m.mode(), Mode::Help);  // scrolling keeps it open
  f = m.compose();
  expect_fits(f);
  EXPECT_NE(line_with(f, "Memory bar"), nullptr) << f.text();
  press(m, Key::Home);
  EXPECT_EQ(line_with(m.compose(), "Memory bar"), nullptr);
  press(m, U'x');
  EXPECT_EQ(m.mode(), Mode::Table);
}

TEST(TuiModelKeys, TheKillDialogPicksTheSignal) {
  for (auto [key, signal] : {std::pair{U't', SIGTERM}, {U'i', SIGINT}, {U'9', SIGKILL}}) {
    auto m = model();
    press(m, U'k');
    m.show_plan({"Plan"}, 1);
    EXPECT_EQ(press(m, key).kind, Effect::ExecuteKill);
    EXPECT_EQ(m.kill_choice().signal, signal);
    EXPECT_FALSE(m.kill_choice().escalate);  // that signal alone
    EXPECT_NE(line_with(m.compose(), "Killing (" + m.kill_choice().name() + ")"), nullptr);
  }
  auto m = model();
  press(m, U'k');
  m.show_plan({"Nothing to signal"}, 0);
  EXPECT_EQ(press(m, U'9').kind, Effect::None);  // nothing to signal: no signal to choose
}

TEST(TuiModelKeys, FunctionKeysAsInHtop) {
  auto m = model();
  press(m, Key::TreeKey);  // F5
  EXPECT_TRUE(m.options().tree);
  press(m, Key::TreeKey);
  EXPECT_FALSE(m.options().tree);
  press(m, Key::Search);  // F3
  EXPECT_EQ(m.mode(), Mode::FilterInput);
  press(m, Key::Escape);
  press(m, Key::FilterKey);  // F4
  EXPECT_EQ(m.mode(), Mode::FilterInput);
  press(m, Key::Escape);
  EXPECT_EQ(m.mode(), Mode::Table);
  EXPECT_EQ(press(m, Key::Quit).kind, Effect::Quit);  // F10
}

TEST(TuiModelKeys, LeftAndRightScrollTheCommandsNotTheSort) {
  auto m = model(false, 80, 24);
  const Sort before = m.options().sort;
  ASSERT_NE(line_with(m.compose(), "python serve.py"), nullptr);
  press(m, Key::Right);
  EXPECT_EQ(m.options().sort.column, before.column);
  auto f = m.compose();
  expect_fits(f);
  EXPECT_EQ(line_with(f, "python serve.py"), nullptr) << f.text();
  EXPECT_NE(line_with(f, "--port"), nullptr) << f.text();  // the rest comes into view
  press(m, Key::Left);
  EXPECT_NE(line_with(m.compose(), "python serve.py"), nullptr);
  press(m, Key::Left);  // already at the start: stays
  EXPECT_NE(line_with(m.compose(), "python serve.py"), nullptr);
}

TEST(TuiModelKeys, SortingNeverUsesAHiddenColumn) {
  auto m = model(false, 200, 40);
  press(m, U'T');  // TIME, shown at 200 columns
  EXPECT_EQ(m.options().sort.column, Column::Time);
  m.set_size(80, 24);  // TIME goes: the order falls back to memory
  EXPECT_EQ(m.options().sort.column, Column::Memory);
  press(m, U'T');  // refused while hidden, and said why
  EXPECT_EQ(m.options().sort.column, Column::Memory);
  EXPECT_NE(line_with(m.compose(), "hidden at this width"), nullptr);
  // < and > walk only the columns on screen.
  for (int i = 0; i < 20; ++i) {
    press(m, U'>');
    bool shown = false;
    for (const auto& c : m.table_columns()) shown |= c.column == m.options().sort.column;
    EXPECT_TRUE(shown) << column_title(m.options().sort.column);
  }
  // Sorted on, SM% shows its whole title and the arrow.
  m.set_size(200, 40);
  press(m, U'%');
  EXPECT_NE(line_with(m.compose(), "SM%▼"), nullptr) << m.compose().text();
}

TEST(TuiModelAt80, TheHintLineSaysWhenItIsCut) {
  for (size_t w : {80u, 100u}) {
    auto m = model(false, w, 24);
    auto f = m.compose();
    expect_fits(f);
    const std::string footer = f.lines[23].text();
    // Not every key fits: the hint ends with an ellipsis before the position; "?" lists them.
    EXPECT_NE(footer.find("…"), std::string::npos) << footer;
    EXPECT_NE(footer.find("? help"), std::string::npos) << footer;
  }
  auto wide = model(false, 300, 24);
  EXPECT_EQ(wide.compose().lines[23].text().find("…"), std::string::npos);
}

TEST(TuiModelAt80, MessagesGoWithTheNextKeyOrAfterAWhile) {
  auto m = model(false, 80, 24);
  m.set_message("the gpureap daemon stopped answering: top samples on its own now", Role::Warn);
  ASSERT_NE(line_with(m.compose(), "daemon stopped answering"), nullptr);
  press(m, Key::Down);  // read: the next key takes it away
  EXPECT_EQ(m.message(), "");
  EXPECT_EQ(line_with(m.compose(), "daemon stopped answering"), nullptr);
  // Unread, it expires.
  m.set_message("no GPU to filter by", Role::Warn);
  auto now = std::chrono::steady_clock::now();
  EXPECT_FALSE(m.expire_message(now));
  EXPECT_EQ(m.message(), "no GPU to filter by");
  EXPECT_TRUE(m.expire_message(now + TopModel::kMessageFor + std::chrono::seconds(1)));
  EXPECT_EQ(m.message(), "");
  // A key that says something new keeps its own message.
  press(m, U'k');
  m.show_plan({"Plan"}, 1);
  press(m, Key::Escape);
  EXPECT_EQ(m.message(), "Nothing was signalled.");
  // A hidden kill's progress stays until its outcome.
  press(m, U'k');
  m.show_plan({"Plan"}, 1);
  press(m, U'y');
  press(m, Key::Escape);
  m.kill_progress("waiting for the GPU memory");
  press(m, Key::Down);
  EXPECT_FALSE(m.expire_message(std::chrono::steady_clock::now() + std::chrono::minutes(1)));
  EXPECT_EQ(m.message(), "waiting for the GPU memory");
}

TEST(TuiModelAt80, ALongStatusEndsWithAnEllipsis) {
  auto m = model(false, 80, 24);
  m.set_message(std::string(30, 'x') + " " + std::string(30, 'y') + " " + std::string(30, 'z'),
                Role::Warn);
  auto f = m.compose();
  expect_fits(f);
  const Line* status = line_with(f, "xxxxxxxxxx");
  ASSERT_NE(status, nullptr) << f.text();
  EXPECT_EQ(status->width(), 80u);
  EXPECT_TRUE(status->text().ends_with("…")) << status->text();
}

TEST(TuiModelAt80, TheHelpHasNoDanglingLines) {
  for (size_t w : {80u, 100u, 120u}) {
    auto m = model(false, w, 60);
    press(m, U'?');
    auto f = m.compose();
    expect_fits(f);
    std::vector<std::string> inside;
    for (const auto& l : f.lines) {
      std::string t = l.text();
      auto open = t.find("│ ");
      auto close = t.rfind(" │");
      if (open == std::string::npos || close == std::string::npos || close <= open) continue;
      std::string body =
          t.substr(open + std::string("│ ").size(), close - open - std::string("│ ").size());
      while (!body.empty() && body.back() == ' ') body.pop_back();
      inside.push_back(body);
    }
    ASSERT_FALSE(inside.empty()) << f.text();
    EXPECT_NE(std::find_if(inside.begin(), inside.end(),
                           [](const std::string& b) { return b.find("Sparklines") == 0; }),
              inside.end())
        << f.text();
    for (const auto& b : inside) {
      // No line starts with a separator or is a title alone.
      EXPECT_FALSE(b.starts_with("·") || b.starts_with(";") || b.starts_with(" ·"))
          << w << ": " << b;
      EXPECT_NE(b, "Rows:") << f.text();
      EXPECT_NE(b, "Memory bar:") << f.text();
      EXPECT_FALSE(b.ends_with("Rows:") || b.ends_with("Memory bar:")) << w << ": " << b;
    }
  }
}

TEST(TuiModelAt80, ProcessesOfOneInterpreterReadApart) {
  std::vector<core::HostProcess> ps = {proc(1, 0, 1)};
  for (auto [pid, script] : {std::pair{600, "train_resnet50.py"}, {601, "evaluate_bert.py"}}) {
    auto p = owned(holder(pid, 1, pid), 1000, "alice");
    p.stat.comm = "python3";
    p.details->cmdline = {"/usr/bin/python3", "-u", std::string("/opt/jobs/nightly/") + script,
                          "--config", "/opt/jobs/nightly/configs/a-long-config-name.yaml"};
    ps.push_back(p);
  }
  auto s = make_snapshot(ps, {gpu(0, 0, 16 * GiB, {listed(600, 8 * GiB), listed(601, 8 * GiB)})});
  TopModel m(TopSettings{false, true, std::chrono::milliseconds(1000), Viewer{0, 0}});
  m.set_size(80, 24);
  m.set_snapshot(std::make_shared<const core::Snapshot>(std::move(s)));
  auto f = m.compose();
  expect_fits(f);
  EXPECT_NE(line_with(f, "python3 train_resnet50.py"), nullptr) << f.text();
  EXPECT_NE(line_with(f, "python3 evaluate_bert.py"), nullptr) << f.text();
  // The filter still reads the whole command line.
  press(m, U'/');
  type(m, "nightly");
  press(m, Key::Enter);
  EXPECT_EQ(m.view().size(), 2u);
}

}  // namespace
}  // namespace gpureap::tui

// The ps screen at the terminal's width (src/output/ps_view.cpp, ps_gpus.cpp, table.cpp): at 80,
// 120 and 200 columns nothing wraps, commands start with the program's name and are cut at the
// edge, the memory figure stays; without a terminal nothing is cut; ASCII without UTF-8; the
// tree's branches; the selection and the order; the compact form; the figures and their JSON.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "output/process_figures.h"
#include "output/ps_render.h"
#include "output/ps_view.h"
#include "output/snapshot_json.h"
#include "snapshot_builders.h"
#include "text/display_width.h"
#include "text_lines.h"

namespace gpureap::output {
namespace {

using namespace gpureap::testing;

const std::string kLongTail = "--config=/very/long/path/to/an/experiment/config.yaml --end";

const std::string* line_with(const std::vector<std::string>& lines, const std::string& what) {
  for (const auto& l : lines)
    if (l.find(what) != std::string::npos) return &l;
  return nullptr;
}

// A trainer with a long interpreter path and a long command line, a worker with a CJK name and
// command, a serving job on GPU 1, and a GPU whose name is long.
core::Snapshot machine() {
  auto trainer = holder(300, 1, 300);
  trainer.stat.comm = "python3.11";
  trainer.details->user = "alice";
  trainer.details->uid = 1000;
  trainer.details->cmdline = {"/usr/bin/python3.11", "train.py", kLongTail};
  trainer.stat.cpu_ticks = 5000;  // 50 s of CPU at 100 ticks a second
  trainer.stat.rss_pages = 1 << 18;
  auto worker = holder(301, 300, 300);
  worker.details->user = "田中太郎";
  worker.details->cmdline = {"训练", "工作进程", kLongTail};
  auto server = holder(400, 1, 400, 1);
  server.details->user = "bob";
  server.details->cmdline = {"/opt/conda/bin/python", "serve.py"};
  auto g0 = gpu(0, 0, 30 * GiB, {listed(300, 30 * GiB)});
  g0.name = "NVIDIA H100 80GB HBM3 Extended Edition";
  g0.utilization_percent = 87;
  g0.temperature_celsius = 61;
  g0.power_watts = 512;
  auto g1 = gpu(1, 1, 20 * GiB, {listed(400, 20 * GiB)});
  auto s = make_snapshot({proc(1, 0, 1), trainer, worker, server}, {g0, g1});
  // Started 1000 + pid ticks after a boot 100 s before the snapshot: 300 is ~90 s old.
  s.proc.boot_time = 1'700'000'000 - 100;
  return s;
}

TEST(PsLayout, NothingWrapsAt80And120And200Columns) {
  auto s = machine();
  for (size_t width : {80u, 120u, 200u}) {
    auto text = render_ps(s, Style(false), {false, width});
    auto lines = lines_of(text);
    for (const auto& l : lines) EXPECT_LE(text::text_width(l), width) << width << ": " << l;
    // The used/total figure of each GPU stays, whatever the bar and the name give up.
    EXPECT_NE(line_with(lines, "30 GiB/100 GiB"), nullptr) << width << "\n" << text;
    EXPECT_NE(line_with(lines, "20 GiB/100 GiB"), nullptr) << width << "\n" << text;
    // The program's name first, not the interpreter's path.
    const std::string* trainer = line_with(lines, "python3.11 train.py");
    ASSERT_NE(trainer, nullptr) << width << "\n" << text;
    EXPECT_EQ(trainer->find("/usr/bin/python3.11"), std::string::npos) << *trainer;
    // The memory split is a line under the GPU's, not a cell that widens its column.
    EXPECT_NE(line_with(lines, "attributed 30 GiB"), nullptr) << text;
  }
  auto narrow = lines_of(render_ps(s, Style(false), {false, 80u}));
  EXPECT_NE(line_with(narrow, "…"), nullptr);  // the long command is cut with an ellipsis
  EXPECT_EQ(line_with(narrow, "--end"), nullptr);
  // At 200 columns the long command lines use the space.
  auto wide = lines_of(render_ps(s, Style(false), {false, 200u}));
  EXPECT_NE(line_with(wide, "train.py " + kLongTail), nullptr);
  EXPECT_NE(line_with(wide, "CPU%"), nullptr);
  EXPECT_NE(line_with(wide, "RSS"), nullptr);
  EXPECT_NE(line_with(wide, "TIME"), nullptr);
}

TEST(PsLayout, WithoutATerminalNothingIsCut) {
  auto text = render_ps(machine(), Style(false), {false, std::nullopt});
  EXPECT_EQ(text.find("…"), std::string::npos) << text;
  EXPECT_NE(text.find("train.py " + kLongTail), std::string::npos) << text;
  // The name it gave itself follows what it runs (a program that runs no script: the program),
  // before the rest of its arguments.
  EXPECT_NE(text.find("训练 (p301) 工作进程 " + kLongTail), std::string::npos) << text;
  EXPECT_NE(text.find("NVIDIA H100 80GB HBM3 Extended Edition"), std::string::npos);
  EXPECT_NE(text.find("█"), std::string::npos);  // the full bar
}

// Jobs started from one long directory, with 7-digit PIDs (pid_max is 4194304 on current
// distributions): three runs of one program on scenarios under one long path, each named for
// itself; two python modules of one package behind interpreter flags; two shell scripts of one
// long directory, one a renamed worker.
struct SamePath {
  core::Snapshot snapshot;
  std::vector<std::pair<pid_t, std::vector<std::string>>> apart;  // each row's telling words
};

SamePath same_path_jobs() {
  const std::string dir = "/tmp/newcomer/experiments/2026-01-01/nightly-sweep";
  std::vector<core::HostProcess> ps{proc(1, 0, 1), proc(4194000, 1, 4194000)};
  SamePath out;
  std::vector<core::DriverProcess> listed_now;
  auto add = [&](pid_t pid, std::vector<std::string> argv, std::string comm,
                 std::vector<std::string> telling) {
    auto p = holder(pid, 4194000, 4194000);
    p.details->cmdline = std::move(argv);
    p.stat.comm = std::move(comm);
    ps.push_back(p);
    listed_now.push_back(listed(pid, GiB));
    out.apart.push_back({pid, std::move(telling)});
  };
  for (int i = 1; i <= 3; ++i) {
    std::string n = std::to_string(i);
    add(4194300 + i,
        {dir + "/bin/mkscenario", dir + "/s" + n + "/scenario.json", "--seed", "7", "--hold",
         "3600"},
        "sim-s" + n, {"(sim-s" + n + ")", "s" + n + "/scenario.json"});
  }
  add(4194311,
      {"/opt/conda/envs/research/bin/python3.11", "-u", "-X", "faulthandler", "-m",
       "research.pipelines.train", "--config", dir + "/train.yaml"},
      "python3.11", {"-m research.pipelines.train"});
  add(4194312,
      {"/opt/conda/envs/research/bin/python3.11", "-u", "-X", "faulthandler", "-m",
       "research.pipelines.eval", "--config", dir + "/eval.yaml"},
      "python3.11", {"-m research.pipelines.eval"});
  add(4194321, {"/bin/sh", "-e", dir + "/jobs/train_resnet50.sh", "--epochs", "90"}, "sh",
      {"sh train_resnet50.sh"});
  add(4194322, {"/bin/sh", dir + "/jobs/pretrain_gpt.sh", "--worker", "3"}, "pt_data_worker",
      {"sh pretrain_gpt.sh (pt_data_worker)"});
  out.snapshot = make_snapshot(ps, {gpu(0, 0, 7 * GiB, listed_now)});
  return out;
}

TEST(PsLayout, JobsFromOneLongPathReadApartAt80And120And200ColumnsWith7DigitPids) {
  auto jobs = same_path_jobs();
  for (bool tree : {false, true})
    for (size_t width : {80u, 120u, 200u}) {
      auto text = render_process_table(jobs.snapshot, Style(false), {tree, width});
      auto lines = lines_of(text);
      for (const auto& l : lines) EXPECT_LE(text::text_width(l), width) << width << ": " << l;
      std::vector<std::string> rows;
      for (const auto& [pid, telling] : jobs.apart) {
        const std::string* row = line_with(lines, std::to_string(pid) + " ");
        ASSERT_NE(row, nullptr) << pid << " at " << width << "\n" << text;
        for (const auto& words : telling)
          EXPECT_NE(row->find(words), std::string::npos)
              << words << " at " << width << (tree ? " (tree)" : "") << "\n"
              << text;
        // What they share comes after what tells them apart, where a cut takes it first.
        const size_t shared = row->find("/tmp/newcomer");
        if (shared != std::string::npos) {
          EXPECT_GT(shared, row->find(telling.back())) << *row;
        }
        rows.push_back(row->substr(row->find("  ")));
      }
      std::sort(rows.begin(), rows.end());
      EXPECT_EQ(std::unique(rows.begin(), rows.end()), rows.end()) << text;
    }
}

TEST(PsLayout, WideCharactersCountTwoColumnsWhenCut) {
  auto s = machine();
  for (size_t width : {80u, 120u}) {
    auto lines = lines_of(render_process_table(s, Style(false), {false, width}));
    const std::string* worker = line_with(lines, "301");
    ASSERT_NE(worker, nullptr);
    EXPECT_LE(text::text_width(*worker), width) << *worker;
    EXPECT_NE(worker->find("训练"), std::string::npos) << *worker;
  }
}

TEST(PsLayout, AsciiWithoutUtf8) {
  auto s = machine();
  for (bool tree : {false, true}) {
    auto text = render_ps(s, Style(false), {tree, 80u, false});
    for (unsigned char c : text) ASSERT_LT(c, 0x80) << text;
    EXPECT_NE(text.find("~"), std::string::npos) << text;  // the cut, in ASCII
    EXPECT_NE(text.find("#"), std::string::npos) << text;  // the bar
  }
  EXPECT_TRUE(locale_speaks_utf8(nullptr, nullptr, "en_US.UTF-8"));
  EXPECT_TRUE(locale_speaks_utf8("C.utf8", nullptr, nullptr));
  EXPECT_FALSE(locale_speaks_utf8("C", nullptr, "en_US.UTF-8"));  // LC_ALL wins
  EXPECT_FALSE(locale_speaks_utf8(nullptr, "POSIX", "en_US.UTF-8"));
  EXPECT_FALSE(locale_speaks_utf8(nullptr, nullptr, nullptr));
  EXPECT_FALSE(locale_speaks_utf8(nullptr, nullptr, "de_DE.ISO-8859-1"));
}

TEST(PsTree, SiblingsBranchAndTheLastEnds) {
  // 200 (root's) forks 201, 202, 203; 202 forks 210.
  auto s = make_snapshot({proc(1, 0, 1), proc(200, 1, 200), holder(201, 200, 200),
                          holder(202, 200, 200), holder(210, 202, 200), holder(203, 200, 200)},
                         {});
  auto lines = lines_of(render_process_table(s, Style(false), {true, std::nullopt}));
  ASSERT_NE(line_with(lines, "├ 201"), nullptr);
  ASSERT_NE(line_with(lines, "├ 202"), nullptr);
  ASSERT_NE(line_with(lines, "│ └ 210"), nullptr);  // under 202, with 203 still to come
  ASSERT_NE(line_with(lines, "└ 203"), nullptr);
  // The ancestor is shown for context with its user.
  const std::string* parent = line_with(lines, "200 ");
  ASSERT_NE(parent, nullptr);
  EXPECT_NE(parent->find("root"), std::string::npos) << *parent;
}

TEST(PsTree, AGonePidsKeepersGoUnderIt) {
  // 300 is gone and listed; its worker 301 (whose parent is init now) keeps its context.
  auto s = make_snapshot({proc(1, 0, 1), holder(301, 1, 300), holder(400, 1, 400)},
                         {gpu(0, 0, 8 * GiB, {listed(300, 8 * GiB)})});
  auto lines = lines_of(render_process_table(s, Style(false), {true, std::nullopt}));
  size_t gone = lines.size(), keeper = lines.size();
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].starts_with("300")) gone = i;
    if (lines[i].find("└ 301") != std::string::npos) keeper = i;
  }
  ASSERT_LT(gone, lines.size()) << lines.size();
  EXPECT_EQ(keeper, gone + 1);
  EXPECT_EQ(line_with(lines, "└ 400"), nullptr);  // not a keeper: a root of its own
}

TEST(PsSelect, GpuUserPidAndTheOrderWithinEachGpu) {
  auto s = machine();
  PsSelection on1{.gpus = {1}};
  auto one = select_rows(s, on1);
  ASSERT_EQ(one.rows.size(), 1u);
  EXPECT_EQ(one.rows[0].pid, 400);
  ASSERT_EQ(one.drivers.gpus.size(), 1u);
  EXPECT_EQ(one.drivers.gpus[0].index, 1u);
  // A holder the driver does not list is on the GPUs its files reach.
  auto on0 = select_rows(s, {.gpus = {0}});
  std::vector<pid_t> pids;
  for (const auto& r : on0.rows) pids.push_back(r.pid);
  EXPECT_EQ(pids, (std::vector<pid_t>{300, 301}));
  auto bobs = select_rows(s, {.users = {"bob"}});
  ASSERT_EQ(bobs.rows.size(), 1u);
  EXPECT_EQ(bobs.rows[0].pid, 400);
  auto by_uid = select_rows(s, {.users = {"1000"}});
  ASSERT_EQ(by_uid.rows.size(), 1u);
  EXPECT_EQ(by_uid.rows[0].pid, 300);
  auto just = select_rows(s, {.pids = {301, 999}});
  ASSERT_EQ(just.rows.size(), 1u);
  EXPECT_EQ(just.rows[0].pid, 301);
  EXPECT_EQ(select_rows(s, {}).rows.size(), s.rows.size());

  // Grouped by GPU: 300 (GPU 0) before 400 (GPU 1) whatever the order, then unlisted rows.
  auto order = [&](PsSort sort) {
    std::vector<pid_t> out;
    for (const auto* r : table_order(s, sort)) out.push_back(r->pid);
    return out;
  };
  EXPECT_EQ(order(PsSort::Pid), (std::vector<pid_t>{300, 400, 301}));
  EXPECT_EQ(order(PsSort::User), (std::vector<pid_t>{300, 400, 301}));
  ASSERT_TRUE(parse_ps_sort("memory"));
  EXPECT_FALSE(parse_ps_sort("size"));
}

TEST(PsSelect, MemoryAndAgeSortWithinAGpu) {
  auto young = holder(500, 1, 500);
  young.stat.start_ticks = 9000;
  auto old = holder(600, 1, 600);
  old.stat.start_ticks = 10;
  auto s = make_snapshot({proc(1, 0, 1), young, old},
                         {gpu(0, 0, 12 * GiB, {listed(500, 8 * GiB), listed(600, 4 * GiB)})});
  auto order = [&](PsSort sort) {
    std::vector<pid_t> out;
    for (const auto* r : table_order(s, sort)) out.push_back(r->pid);
    return out;
  };
  EXPECT_EQ(order(PsSort::Memory), (std::vector<pid_t>{500, 600}));
  EXPECT_EQ(order(PsSort::Age), (std::vector<pid_t>{600, 500}));  // oldest first
  EXPECT_EQ(order(PsSort::Pid), (std::vector<pid_t>{500, 600}));
}

TEST(PsCompact, OneLinePerGpuWithItsUsersAndMemory) {
  auto text = render_ps(machine(), Style(false), {false, 80u, true, PsSort::Pid, true});
  auto lines = lines_of(text);
  ASSERT_EQ(lines.size(), 2u) << text;
  EXPECT_TRUE(lines[0].starts_with("[0] NVIDIA H100")) << lines[0];
  EXPECT_NE(lines[0].find("87 %"), std::string::npos);
  EXPECT_NE(lines[0].find("alice 30G (300)"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("bob 20G (400)"), std::string::npos) << lines[1];
  for (const auto& l : lines) EXPECT_LE(text::text_width(l), 80u) << l;
}

TEST(ProcessFigures, CpuOverTheLifeRssAndTimeAndTheirJson) {
  auto s = machine();
  const auto* trainer = s.find(300);
  ASSERT_NE(trainer, nullptr);
  auto f = process_figures(s, *trainer);
  // Started at 1300 ticks = 13 s after boot, 87 s before the snapshot; 50 s of CPU.
  ASSERT_TRUE(f.run_time && f.cpu && f.cpu_percent && f.rss_bytes);
  EXPECT_EQ(f.run_time->count(), 87);
  EXPECT_EQ(f.cpu->count(), 50'000);
  EXPECT_NEAR(*f.cpu_percent, 100.0 * 50 / 87, 0.01);
  EXPECT_EQ(cpu_percent_text(f.cpu_percent), "57.5");
  EXPECT_EQ(cpu_time_text(f.cpu), "0:50");
  EXPECT_EQ(cpu_time_text(std::chrono::milliseconds(3'723'000)), "1:02:03");
  EXPECT_EQ(cpu_time_text(std::chrono::milliseconds(90'061'000)), "1-01:01:01");
  EXPECT_EQ(cpu_time_text(std::nullopt), "-");
  auto doc = snapshot_to_json(s);
  for (const auto& p : doc["processes"]) {
    if (p["pid"] != 300) continue;
    EXPECT_DOUBLE_EQ(p["cpu_percent"].get<double>(), 57.5);
    EXPECT_DOUBLE_EQ(p["cpu_time_seconds"].get<double>(), 50.0);
    EXPECT_EQ(p["run_time_seconds"], 87);
    EXPECT_TRUE(p.contains("rss_bytes"));  // kept: the schema only grows
  }
  // Without a boot time the age and the percentage are unknown, not zero.
  s.proc.boot_time.reset();
  auto unknown = process_figures(s, *s.find(300));
  EXPECT_FALSE(unknown.cpu_percent);
  EXPECT_FALSE(unknown.run_time);
}

TEST(PsRender, ProtectedProcessNotesOnlyWithVerbose) {
  auto s = machine();
  s.proc.warnings.push_back(
      "PID 1 (init): the kernel refuses to show its open files even to this user");
  s.proc.warnings.push_back("something else worth saying");
  auto quiet = render_ps_command(s, {});
  auto loud = render_ps_command(s, {.verbose = true});
  auto has = [](const PsRendered& r, const std::string& what) {
    for (const auto& l : r.err)
      if (l.find(what) != std::string::npos) return true;
    return false;
  };
  EXPECT_FALSE(has(quiet, "refuses"));
  EXPECT_TRUE(has(quiet, "something else"));
  EXPECT_TRUE(has(loud, "refuses"));
}

// Two jobs of one interpreter, a ghost and its keeper, a leak and a shared client: every
// footer and note there is.
core::Snapshot ghost_machine() {
  std::vector<core::HostProcess> ps = {proc(1, 0, 1)};
  for (auto [pid, script] :
       {std::pair{500, "train_resnet50.py"}, {501, "evaluate_bert_large.py"}}) {
    auto p = holder(pid, 1, pid);
    p.stat.comm = "python3";
    p.details->user = "a-long-user-name";
    p.details->cmdline = {"/usr/bin/python3", "-u", std::string("/opt/jobs/nightly/") + script,
                          "--config", "/opt/jobs/nightly/configs/experiment.yaml"};
    ps.push_back(p);
  }
  auto keeper = holder(4250, 1, 4242);
  keeper.stat.comm = "pt_data_worker";
  keeper.details->cmdline = {"/usr/bin/python3", "/opt/jobs/nightly/gpt.py"};
  ps.push_back(keeper);
  auto g0 =
      gpu(0, 0, 72 * GiB, {listed(500, 40 * GiB), listed(501, 24 * GiB), listed(4242, 8 * GiB)});
  auto g1 = gpu(1, 1, 4 * GiB, {listed(4300, 4 * GiB)});
  return make_snapshot(ps, {g0, g1});
}

TEST(PsAt80, EveryLineFitsFootersIncludedAndTheJobsReadApart) {
  auto s = ghost_machine();
  for (bool tree : {false, true}) {
    auto text = render_ps(s, Style(false), {tree, 80u});
    auto lines = lines_of(text);
    for (const auto& l : lines) EXPECT_LE(text::text_width(l), 80u) << l << "\n" << text;
    const std::string* a = line_with(lines, "python3 train_resnet50.py");
    const std::string* b = line_with(lines, "python3 evaluate_bert_large.py");
    ASSERT_NE(a, nullptr) << text;
    ASSERT_NE(b, nullptr) << text;
    EXPECT_NE(line_with(lines, "python3 gpt.py (pt_data_worker)"), nullptr) << text;
    // The footer's commands are whole, each on one line.
    EXPECT_NE(line_with(lines, "`gpureap kill 4242`"), nullptr) << text;
    EXPECT_NE(line_with(lines, "`gpureap reset --gpu 1`"), nullptr) << text;
    // The anomalies are whole, under their row.
    const std::string* anomalies = line_with(lines, "anomalies: orphan");
    ASSERT_NE(anomalies, nullptr) << text;
    EXPECT_NE(anomalies->find("inherited-holder"), std::string::npos) << text;
  }
  // Into a pipe: one line per footer, as before.
  auto piped = render_ps(s, Style(false), {false, std::nullopt});
  EXPECT_NE(piped.find("is held by ghosts (1 process keeps it alive). `gpureap doctor` explains; "
                       "`gpureap kill 4242` frees it."),
            std::string::npos)
      << piped;
}

TEST(PsCompact, AGhostsEntryIsNeverCut) {
  auto s = ghost_machine();
  for (size_t width : {60u, 80u}) {
    auto text = render_ps(s, Style(false), {false, width, true, PsSort::Pid, true});
    auto lines = lines_of(text);
    for (const auto& l : lines) EXPECT_LE(text::text_width(l), width) << l << "\n" << text;
    EXPECT_NE(text.find("(gone) 8.0G (4242)"), std::string::npos) << text;
    EXPECT_NE(text.find("(gone) 4.0G (4300)"), std::string::npos) << text;
    // The footer is whole too.
    EXPECT_NE(text.find("`gpureap kill 4242`"), std::string::npos) << text;
  }
}

}  // namespace
}  // namespace gpureap::output

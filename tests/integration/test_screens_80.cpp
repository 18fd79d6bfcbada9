// `ps`, `ps --tree`, `ps --compact`, `kill`'s plan and `top` at 80 columns, on a scene of real
// processes: two jobs of one interpreter (`sh`) with long script paths and arguments, and a
// ghost whose memory a worker that renamed itself keeps. Every line fits 80 columns (COLUMNS
// into a pipe, a real terminal through script(1), a pseudo-terminal for the kill's question,
// tmux for top); the two jobs read apart; the kill plan keeps its command column.
#include <gtest/gtest.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "support.h"

namespace gpureap::testing {
namespace {

using nlohmann::json;

// A shell job: keeps fd 9 (its GPU file) and sleeps in naps that do not inherit it. The
// worker first names itself, as a PyTorch DataLoader worker does. (A nap just forked still holds
// it for an instant: long naps make that rare.)
const std::string kJobScript = "#!/bin/sh\nwhile :; do sleep 5 9<&-; done\n";
const std::string kWorkerScript =
    "#!/bin/sh\nprintf pt_data_worker > /proc/$$/comm\nwhile :; do sleep 5 9<&-; done\n";

// Holds `path` as fd 9 alone: the jobs' naps close it, so they hold nothing.
void hold_as_fd9(const std::string& path) {
  int fd = hold(path);
  if (fd != 9) {
    ::dup2(fd, 9);
    ::close(fd);
  }
}

bool wait_cmdline(pid_t pid, const std::string& part, const std::string& comm = "") {
  return wait_until([&] {
    std::string cmdline = read_text("/proc/" + std::to_string(pid) + "/cmdline");
    std::string name = read_text("/proc/" + std::to_string(pid) + "/comm");
    return cmdline.find(part) != std::string::npos &&
           (comm.empty() || name.find(comm) != std::string::npos);
  });
}

struct Screens80Scene {
  FakeDevRoot dev;
  TempDir jobs;
  std::string dir;
  std::unique_ptr<Child> train, eval;
  pid_t ghost = 0, worker = 0;
  KillStrays strays;
  std::unique_ptr<FakeNvml> nvml;

  // A child that holds nvidia0 as fd 9 and runs `sh -e SCRIPT ARGS...`.
  std::unique_ptr<Child> job(const std::string& script, std::vector<std::string> args) {
    Ready ready;
    auto c = std::make_unique<Child>([&] {
      hold_as_fd9(dev.dev("nvidia0"));
      ready.signal();
      std::vector<std::string> argv = {"sh", "-e", dir + "/" + script};
      argv.insert(argv.end(), args.begin(), args.end());
      std::vector<char*> a;
      for (auto& s : argv) a.push_back(s.data());
      a.push_back(nullptr);
      ::execv("/bin/sh", a.data());
      ::_exit(127);
    });
    ready.wait();
    EXPECT_TRUE(wait_cmdline(c->pid(), script)) << script;
    return c;
  }

  Screens80Scene() {
    dir = jobs.path() + "/jobs/nightly";
    std::filesystem::create_directories(dir);
    for (const auto& name : {"train_resnet50.sh", "evaluate_bert_large.sh"})
      std::ofstream(dir + "/" + name) << kJobScript;
    std::ofstream(dir + "/pretrain_gpt.sh") << kWorkerScript;
    train = job("train_resnet50.sh", {"--epochs", "90", "--data", "/datasets/imagenet/train"});
    eval = job("evaluate_bert_large.sh",
               {"--batch-size", "64", "--checkpoint", "/checkpoints/bert/last.pt"});
    // The ghost: a trainer that started its worker and died; the worker keeps its context.
    Ready ready;
    Child trainer([&] {
      ::setpgid(0, 0);
      hold_as_fd9(dev.dev("nvidia0"));
      pid_t w = ::fork();
      if (w == 0) {
        std::string script = dir + "/pretrain_gpt.sh";
        ::execl("/bin/sh", "sh", script.c_str(), "--worker", "3", "--shard",
                "/datasets/pile/shard-0003", nullptr);
        ::_exit(127);
      }
      ready.send(w);
      ::_exit(0);
    });
    ghost = trainer.pid();
    worker = static_cast<pid_t>(ready.receive());
    strays.pids = {worker};
    trainer.kill_and_reap();
    EXPECT_TRUE(wait_cmdline(worker, "pretrain_gpt.sh", "pt_data_worker"));
    json gpu = {
        {"name", "NVIDIA H200"},
        {"uuid", "GPU-0"},
        {"minor", 0},
        {"total_bytes", 140 * GiB},
        {"utilization_percent", 87},
        {"temperature_celsius", 61},
        {"power_mw", 512000},
        {"processes",
         json::array({{{"pid", train->pid()}, {"used_bytes", 40 * GiB}},
                      {{"pid", eval->pid()}, {"used_bytes", 24 * GiB}},
                      {{"pid", ghost}, {"used_bytes", 8 * GiB}, {"holders", {ghost, worker}}}})}};
    nvml = std::make_unique<FakeNvml>(json{{"gpus", json::array({gpu})}});
  }

  std::vector<std::string> env(std::vector<std::string> extra = {}) const {
    auto e = nvml->env();
    e.insert(e.end(), extra.begin(), extra.end());
    return e;
  }
  std::vector<std::string> args(std::vector<std::string> a) const {
    a.push_back("--dev-root");
    a.push_back(dev.path());
    if (a.front() == "ps") a.push_back("--no-daemon");
    return a;
  }
};

// Columns of a line of gpureap's output (its glyphs, "…", "█", "─", take one column each).
size_t screen_columns(const std::string& line) {
  size_t n = 0;
  for (unsigned char c : line) n += (c & 0xC0) != 0x80;
  return n;
}

// Without the colours a terminal gets.
std::string plain(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\x1b' && i + 1 < text.size() && text[i + 1] == '[') {
      while (i < text.size() && !std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
      continue;
    }
    out += text[i];
  }
  return out;
}

void expect_fits(const std::string& text, size_t width, const std::string& what) {
  for (const auto& l : lines_of(plain(text)))
    EXPECT_LE(screen_columns(l), width) << what << ": " << l << "\n" << text;
}

// The line of the table row of pid: the PID first, after the tree's branches.
std::string row(const std::string& text, pid_t pid) {
  for (const auto& l : lines_of(plain(text))) {
    size_t i = 0;
    while (i < l.size() && (l[i] == ' ' || static_cast<unsigned char>(l[i]) >= 0x80 ||
                            l[i] == '|' || l[i] == '`' || l[i] == '-'))
      ++i;
    size_t j = i;
    while (j < l.size() && std::isdigit(static_cast<unsigned char>(l[j]))) ++j;
    if (j > i && l.substr(i, j - i) == std::to_string(pid)) return l;
  }
  return "";
}

// gpureap on a real terminal of 80 columns: script(1) gives it one.
RunResult on_terminal(const Screens80Scene& scene, const std::vector<std::string>& args) {
  std::string cmd = "stty cols 80 rows 40; exec env";
  for (const auto& e : scene.env({"LC_ALL=C.UTF-8"})) cmd += " '" + e + "'";
  cmd += std::string(" '") + GPUREAP_BINARY + "'";
  for (const auto& a : scene.args(args)) cmd += " '" + a + "'";
  return run_program_in({"script", "-qec", cmd, "/dev/null"},
                        {"PATH=/usr/bin:/bin", "TERM=xterm", "LC_ALL=C.UTF-8"});
}

TEST(Screens80, PsFitsAndTellsTheJobsApart) {
  REQUIRE_DOUBLE();
  Screens80Scene scene;
  for (bool tree : {false, true}) {
    std::vector<std::string> a = {"ps"};
    if (tree) a.push_back("--tree");
    auto r = run_gpureap(scene.args(a), scene.env({"COLUMNS=80", "LC_ALL=C.UTF-8"}));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    expect_fits(r.out, 80, tree ? "ps --tree" : "ps");
    std::string train = row(r.out, scene.train->pid()), eval = row(r.out, scene.eval->pid());
    // The tree's branches take their columns from the command: the scripts still show.
    EXPECT_NE(train.find(tree ? "sh train_resnet50.sh" : "sh train_resnet50.sh --epochs"),
              std::string::npos)
        << r.out;
    EXPECT_NE(eval.find(tree ? "sh evaluate_bert_large.sh" : "sh evaluate_bert_large.sh --batch"),
              std::string::npos)
        << r.out;
    EXPECT_NE(train, eval);
    EXPECT_NE(
        row(r.out, scene.worker)
            .find(tree ? "sh pretrain_gpt.sh (pt_data" : "sh pretrain_gpt.sh (pt_data_worker)"),
        std::string::npos)
        << r.out;
    // The footer is whole: the command that frees the ghost is on one line.
    EXPECT_NE(r.out.find("`gpureap kill " + std::to_string(scene.ghost) + "`"), std::string::npos)
        << r.out;
    if (!tree) std::cout << "---- gpureap ps at 80 columns ----\n" << r.out;
  }
  // A real terminal of 80 columns: the same fit, colours and all.
  auto t = on_terminal(scene, {"ps"});
  ASSERT_EQ(t.exit_code, 0) << t.out << t.err;
  expect_fits(t.out, 80, "ps on a terminal");
  EXPECT_NE(row(t.out, scene.train->pid()).find("train_resnet50.sh"), std::string::npos) << t.out;
  EXPECT_NE(row(t.out, scene.eval->pid()).find("evaluate_bert_large.sh"), std::string::npos)
      << t.out;
  t = on_terminal(scene, {"ps", "--tree"});
  expect_fits(t.out, 80, "ps --tree on a terminal");
  // Into a pipe without COLUMNS nothing is cut: the whole command line.
  auto piped = run_gpureap(scene.args({"ps"}), scene.env());
  EXPECT_NE(row(piped.out, scene.train->pid()).find("/datasets/imagenet/train"), std::string::npos)
      << piped.out;
}

TEST(Screens80, CompactNeverCutsTheGhost) {
  REQUIRE_DOUBLE();
  Screens80Scene scene;
  for (size_t width : {80u, 60u}) {
    auto r = run_gpureap(scene.args({"ps", "--compact"}),
                         scene.env({"COLUMNS=" + std::to_string(width), "LC_ALL=C.UTF-8"}));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    expect_fits(r.out, width, "ps --compact");
    EXPECT_NE(r.out.find("(gone) 8.0G (" + std::to_string(scene.ghost) + ")"), std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("held by ghosts"), std::string::npos) << r.out;
  }
}

TEST(Screens80, TheKillPlanKeepsItsCommandColumn) {
  REQUIRE_DOUBLE();
  Screens80Scene scene;
  auto r = run_gpureap(scene.args({"kill", "--ghosts", "--dry-run"}),
                       scene.env({"COLUMNS=80", "LC_ALL=C.UTF-8"}));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  expect_fits(r.out, 80, "kill --dry-run");
  EXPECT_NE(r.out.find("COMMAND"), std::string::npos) << r.out;
  EXPECT_NE(row(r.out, scene.worker).find("sh pretrain_gpt.sh (pt_data_worker)"), std::string::npos)
      << r.out;
  std::cout << "---- gpureap kill --ghosts --dry-run at 80 columns ----\n" << r.out;

  // Asked on a terminal of 80 columns, answered no: the plan fits, names each command, and
  // nothing is signalled.
  auto t = run_gpureap_on_tty(
      scene.args({"kill", std::to_string(scene.train->pid()), std::to_string(scene.eval->pid())}),
      "[y/N]", "n", scene.env({"LC_ALL=C.UTF-8"}), 80);
  expect_fits(t.out, 80, "kill's question");
  EXPECT_NE(t.out.find("COMMAND"), std::string::npos) << t.out;
  EXPECT_NE(row(t.out, scene.train->pid()).find("sh train_resnet50.sh"), std::string::npos)
      << t.out;
  EXPECT_NE(row(t.out, scene.eval->pid()).find("sh evaluate_bert_large.sh"), std::string::npos)
      << t.out;
  EXPECT_NE(t.out.find("Nothing was signalled."), std::string::npos) << t.out;
  EXPECT_TRUE(is_alive(scene.train->pid()));
  EXPECT_TRUE(is_alive(scene.eval->pid()));
  std::cout << "---- gpureap kill (asked, answered no) at 80 columns ----\n" << plain(t.out);
}

TEST(Screens80, TopAt80x24) {
  REQUIRE_DOUBLE();
  if (!have_tmux()) GTEST_SKIP() << "tmux is not installed";
  Screens80Scene scene;
  TmuxGpureap top({"top", "--dev-root", scene.dev.path(), "-d", "300ms"}, scene.env(), 80, 24);
  auto s = top.wait_until(
      [&](const std::string& sc) {
        return !rows_of(sc, scene.train->pid()).empty() &&
               !rows_of(sc, scene.eval->pid()).empty() && !rows_of(sc, scene.worker).empty();
      },
      "the two jobs and the worker");
  for (const auto& l : lines_of(s)) EXPECT_LE(screen_columns(l), 80u) << l;
  EXPECT_NE(rows_of(s, scene.train->pid()).front().find("sh train_resnet50.sh"), std::string::npos)
      << s;
  EXPECT_NE(rows_of(s, scene.eval->pid()).front().find("sh evaluate_bert_large"), std::string::npos)
      << s;
  // The hint line says it is cut.
  auto lines = lines_of(s);
  ASSERT_FALSE(lines.empty());
  std::string hint;
  for (const auto& l : lines)
    if (l.find("q quit") != std::string::npos) hint = l;
  EXPECT_NE(hint.find("…"), std::string::npos) << s;
  // The help: no line starts with a separator.
  top.keys({"?"});
  s = top.wait_for("gpureap top: keys");
  for (const auto& l : lines_of(s)) {
    auto open = l.find("│ ");
    if (open == std::string::npos) continue;
    std::string body = l.substr(open + std::string("│ ").size());
    EXPECT_FALSE(body.starts_with("·") || body.starts_with(";")) << s;
  }
  top.keys({"q"});
  top.keys({"q"});
  EXPECT_EQ(top.exit_code(), 0);
}

#ifdef FAKE_NVML_NO_MIG_LIBRARY
// A library older than MIG: one note for the capability it lacks, wrapped at 80 columns, said on
// every command only where a GPU is in MIG mode; elsewhere only with -v.
TEST(Screens80, AnNvmlWithoutMigSaysOneWrappedNoteOnlyWhereMigIsUsed) {
  FakeDevRoot dev;
  const std::string note =
      "gpureap: note: this NVML library lacks the functions for MIG instances\n"
      "  (nvmlDeviceGetMaxMigDeviceCount, nvmlDeviceGetMigDeviceHandleByIndex,\n"
      "  nvmlDeviceGetGpuInstanceId, nvmlDeviceGetComputeInstanceId), so they are\n"
      "  unknown\n";
  for (bool mig : {false, true}) {
    FakeNvml nvml(json{{"gpus", {{{"name", "NVIDIA A100"}, {"mig_mode", mig}}}}});
    auto env = nvml.env();
    for (auto& e : env)
      if (e.rfind("GPUREAP_NVML_LIBRARY=", 0) == 0)
        e = std::string("GPUREAP_NVML_LIBRARY=") + FAKE_NVML_NO_MIG_LIBRARY;
    env.push_back("COLUMNS=80");
    auto quiet = run_gpureap({"ps", "--dev-root", dev.path()}, env);
    EXPECT_EQ(quiet.exit_code, 0) << quiet.err;
    EXPECT_EQ(quiet.err, mig ? note : "") << (mig ? "in MIG mode" : "not in MIG mode");
    auto verbose = run_gpureap({"ps", "-v", "--dev-root", dev.path()}, env);
    EXPECT_EQ(verbose.exit_code, 0) << verbose.err;
    EXPECT_NE(verbose.err.find(note.substr(0, note.find('\n'))), std::string::npos) << verbose.err;
    for (const auto& line : lines_of(verbose.err)) EXPECT_LE(line.size(), 80u) << line;
  }
}
#endif

}  // namespace
}  // namespace gpureap::testing

// One problem, one finding, on real processes and the NVML test double: a ghost (a gone
// trainer whose orphaned worker keeps its memory), a leak (memory of a gone PID that nothing
// holds), a paused job and a parent that does not reap its zombie are four problems, and
// `gpureap doctor` tells four, each PID in one of them, in lines that fit an 80-column
// terminal.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <sstream>

#include "support.h"

namespace gpureap::testing {
namespace {

using nlohmann::json;

json gpu_entry(unsigned minor, json processes) {
  return {{"name", "NVIDIA H200"},
          {"uuid", "GPU-000" + std::to_string(minor)},
          {"pci_bus_id", "00000000:1" + std::to_string(minor) + ":00.0"},
          {"minor", minor},
          {"total_bytes", 80 * GiB},
          {"processes", processes}};
}

class DoctorStory : public ::testing::Test {
 protected:
  void SetUp() override {
    ghost_ = gone_trainer(dev_);
    paused_ = std::make_unique<Child>(holding(dev_, "nvidia0"));
    ::kill(paused_->pid(), SIGSTOP);
    ASSERT_TRUE(wait_for_state(paused_->pid(), 'T'));
    Ready forked;
    parent_ = std::make_unique<Child>([&] {
      hold(dev_.dev("nvidia0"));
      pid_t z = ::fork();
      if (z == 0) ::_exit(0);
      forked.send(z);
    });
    zombie_ = static_cast<pid_t>(forked.receive());
    ASSERT_TRUE(wait_for_state(zombie_, 'Z'));
    leak_ = dead_pid();
    nvml_ = std::make_unique<FakeNvml>(
        json{{"gpus",
              {gpu_entry(0, {{{"pid", ghost_->trainer},
                              {"used_bytes", 8 * GiB},
                              {"holders", {ghost_->trainer, ghost_->worker}}},
                             {{"pid", paused_->pid()}, {"used_bytes", 4 * GiB}},
                             {{"pid", parent_->pid()}, {"used_bytes", 1 * GiB}}}),
               gpu_entry(1, {{{"pid", leak_}, {"used_bytes", 6 * GiB}, {"leaked", true}}})}}});
  }
  void TearDown() override {
    if (paused_) paused_->kill_and_reap();
  }

  std::vector<std::string> args(std::vector<std::string> extra) const {
    std::vector<std::string> a{"doctor", "--dev-root", dev_.path()};
    if (std::find(extra.begin(), extra.end(), "--settle") == extra.end())
      a.insert(a.end(), {"--settle", "300ms"});
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }

  FakeDevRoot dev_;
  std::unique_ptr<GoneTrainer> ghost_;
  std::unique_ptr<Child> paused_, parent_;
  pid_t zombie_ = 0, leak_ = 0;
  std::unique_ptr<FakeNvml> nvml_;
};

// Columns of a line of doctor's output: its characters (none is wide), colour escapes none.
size_t doctor_columns(const std::string& line) {
  size_t n = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\x1b' && i + 1 < line.size() && line[i + 1] == '[') {
      while (i < line.size() && !(line[i] >= 0x40 && line[i] <= 0x7E && line[i] != '[')) ++i;
      continue;
    }
    n += (static_cast<unsigned char>(line[i]) & 0xC0) != 0x80;
  }
  return n;
}

size_t naming(const std::vector<json>& problems, pid_t pid) {
  size_t n = 0;
  for (const auto& f : problems)
    for (const auto& p : f["pids"]) n += p.get<pid_t>() == pid;
  return n;
}

TEST_F(DoctorStory, FourProblemsAreFourFindingsEachPidInOne) {
  REQUIRE_DOUBLE();
  auto r = run_gpureap(args({"--json"}), nvml_->env());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  auto doc = parse_output(r);
  std::vector<json> problems;
  for (const auto& f : doc["findings"])
    if (f["severity"] != "info") problems.push_back(f);
  ASSERT_EQ(problems.size(), 4u) << doc["findings"].dump(2);
  for (pid_t pid : {ghost_->trainer, ghost_->worker, leak_, paused_->pid(), parent_->pid()})
    EXPECT_EQ(naming(problems, pid), 1u) << pid << ": " << doc["findings"].dump(2);
  const auto& ghost = problems[0];
  EXPECT_EQ(ghost["code"], "no-such-process");
  EXPECT_EQ(ghost["pids"], json::array({ghost_->trainer, ghost_->worker}));
  EXPECT_EQ(ghost["codes"], json::array({"no-such-process", "inherited-holder", "orphan-holder"}));
  EXPECT_EQ(ghost["summary"], "GPU 0: 8.0 GiB held by gone PID " + std::to_string(ghost_->trainer) +
                                  " through 1 worker");
  ASSERT_EQ(ghost["steps"].size(), 1u) << ghost.dump(2);
  EXPECT_EQ(ghost["steps"][0]["command"], "gpureap kill " + std::to_string(ghost_->trainer));
  EXPECT_EQ(problems[1]["code"], "leaked-memory");
  EXPECT_EQ(problems[1]["pids"], json::array({leak_}));
  EXPECT_EQ(problems[2]["code"], "stopped-holder");
  EXPECT_EQ(problems[3]["code"], "unreaped-zombies");
  // --only finds the keeper's orphan-holder in the ghost's finding.
  auto only = parse_output(run_gpureap(args({"--json", "--only", "orphan-holder"}), nvml_->env()));
  ASSERT_EQ(only["findings"].size(), 1u) << only.dump(2);
  EXPECT_EQ(only["findings"][0]["code"], "no-such-process");
}

TEST_F(DoctorStory, TheScreenTellsEachProblemOnceFirstAndFitsEightyColumns) {
  REQUIRE_DOUBLE();
  auto env = nvml_->env();
  env.push_back("COLUMNS=80");
  auto r = run_gpureap(args({"--no-color"}), env);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  auto lines = lines_of(r.out);
  ASSERT_GE(lines.size(), 5u) << r.out;
  EXPECT_EQ(lines[0], "4 problems need attention (2 critical):") << r.out;
  EXPECT_EQ(lines[1].rfind(" 1. GPU 0: 8.0 GiB held by gone PID " +
                               std::to_string(ghost_->trainer) + " through 1 worker",
                           0),
            0u)
      << r.out;
  for (const auto& l : lines) EXPECT_LE(doctor_columns(l), 80u) << l;
  // The same story once: the ghost's codes are not findings of their own.
  EXPECT_EQ(r.out.find("WARNING inherited-holder"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("WARNING orphan-holder"), std::string::npos) << r.out;
  // Into a pipe without COLUMNS: nothing is wrapped, no pager runs, no wait is announced.
  auto piped = run_gpureap(args({"--no-color"}), nvml_->env());
  EXPECT_LT(lines_of(piped.out).size(), lines.size());
  EXPECT_EQ(piped.err.find("checking again"), std::string::npos) << piped.err;
}

TEST_F(DoctorStory, OnAnEightyColumnTerminalEveryLineFitsAndTheWaitIsSaid) {
  REQUIRE_DOUBLE();
  std::string command = "stty cols 80 rows 200; exec " + std::string(GPUREAP_BINARY);
  for (const auto& a : args({"--no-pager", "--settle", "1s"})) command += " '" + a + "'";
  auto env = nvml_->env();
  env.push_back("PATH=/usr/bin:/bin");
  env.push_back("TERM=dumb");
  env.push_back("LANG=C.UTF-8");
  auto r = run_program_in({"script", "-q", "-e", "-c", command, "/dev/null"}, env);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  auto lines = lines_of(r.out);
  ASSERT_GT(lines.size(), 5u) << r.out << r.err;
  // Said at once, with what the first sample shows already.
  EXPECT_NE(r.out.find("checking again in 1s to tell memory being released from leaked "
                       "memory…"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("Found so far:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("4 problems need attention"), std::string::npos) << r.out;
  for (const auto& l : lines) EXPECT_LE(doctor_columns(l), 80u) << l;
  // Once: the report draws over the early lines (cursor up over every one of them, erase to the
  // end), so the screen shows each finding once.
  const size_t early = r.out.rfind('\n', r.out.find("gpureap: checking again")) + 1;
  const size_t up = r.out.find("\x1b[", early);
  ASSERT_NE(up, std::string::npos) << r.out;
  const size_t a = r.out.find("A\x1b[J", up);
  ASSERT_NE(a, std::string::npos) << "the early lines are not erased: " << r.out;
  const std::string early_text = r.out.substr(early, up - early);
  EXPECT_EQ(std::stoul(r.out.substr(up + 2, a - up - 2)), lines_of(early_text).size())
      << early_text;
  const std::string screen = r.out.substr(0, early) + r.out.substr(a + 5);
  // The first sample shows the paused job already; the report says it again, once.
  const std::string paused = "is paused (state T) and holds 4.0 GiB";
  EXPECT_NE(early_text.find(paused), std::string::npos) << early_text;
  const size_t first = screen.find(paused);
  ASSERT_NE(first, std::string::npos) << screen;
  EXPECT_EQ(screen.find(paused, first + 1), std::string::npos) << screen;
  EXPECT_EQ(screen.find("Found so far:"), std::string::npos) << screen;
}

}  // namespace
}  // namespace gpureap::testing

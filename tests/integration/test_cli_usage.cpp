// The command line as a user meets it: every `--help` reads as sentences and ends with its exit
// statuses, a typo gets "did you mean", and `run` says where its options go.
#include <gtest/gtest.h>

#include <sstream>

#include "support.h"

namespace gpureap::testing {
namespace {

// The names listed under "Subcommands:" in a help text.
std::vector<std::string> subcommands_in(const std::string& help) {
  std::vector<std::string> out;
  bool in_list = false;
  for (const auto& line : lines_of(help)) {
    if (line == "Subcommands:") {
      in_list = true;
      continue;
    }
    if (!in_list) continue;
    if (line.empty() || line[0] != ' ') break;
    if (line.size() > 2 && line[2] != ' ') out.push_back(line.substr(2, line.find(' ', 2) - 2));
  }
  return out;
}

// gpureap's own help and every subcommand's, nested ones included ("policy test").
std::vector<std::vector<std::string>> every_command() {
  std::vector<std::vector<std::string>> out{{}};
  for (size_t i = 0; i < out.size(); ++i) {
    auto args = out[i];
    args.push_back("--help");
    auto r = run_gpureap(args);
    for (const auto& sub : subcommands_in(r.out)) {
      auto path = out[i];
      path.push_back(sub);
      out.push_back(path);
    }
  }
  return out;
}

std::string joined(const std::vector<std::string>& words) {
  std::string out = "gpureap";
  for (const auto& w : words) out += " " + w;
  return out;
}

TEST(CliHelp, EveryHelpReadsAsSentencesAndEndsWithItsExitStatuses) {
  auto commands = every_command();
  // Every subcommand of gpureap, and policy's.
  ASSERT_GE(commands.size(), 12u);
  bool saw_policy_test = false;
  for (const auto& command : commands) {
    if (joined(command) == "gpureap policy test") saw_policy_test = true;
    auto args = command;
    args.push_back("--help");
    auto r = run_gpureap(args);
    const std::string name = joined(command);
    ASSERT_EQ(r.exit_code, 0) << name << r.err;
    for (const char* leftover :
         {"Excludes", "Needs:", "REQUIRED", "UINT", "INT in", " TEXT", "TEXT:", "=5", "=TERM",
          "=10s", "=60s", "=30s", "=1s", "=6h", "=report.html", "required TEXT missing",
          "Print this help message", "Display program version", "\nps:\n"})
      EXPECT_EQ(r.out.find(leftover), std::string::npos) << name << ": " << leftover << "\n"
                                                         << r.out;
    // Into a pipe the text is wrapped at 80 columns.
    for (const auto& line : lines_of(r.out)) EXPECT_LE(line.size(), 80u) << name << ": " << line;
    // The exit statuses close it: the last section, every line after the title one status.
    auto at = r.out.rfind("\nExit status:\n");
    ASSERT_NE(at, std::string::npos) << name << "\n" << r.out;
    auto statuses = lines_of(r.out.substr(at + 14));
    ASSERT_FALSE(statuses.empty()) << name;
    for (const auto& line : statuses) EXPECT_TRUE(line.starts_with("  ")) << name << ": " << line;
  }
  EXPECT_TRUE(saw_policy_test);
}

TEST(CliHelp, OptionsSayWhatTheirValuesAre) {
  auto kill = run_gpureap({"kill", "--help"}).out;
  EXPECT_NE(kill.find("--group"), std::string::npos);
  EXPECT_NE(kill.find("(not with --tree)"), std::string::npos) << kill;
  EXPECT_NE(kill.find("--grace DURATION"), std::string::npos) << kill;
  EXPECT_NE(kill.find("(default 10s)"), std::string::npos) << kill;
  EXPECT_NE(kill.find("  3     nothing matched"), std::string::npos) << kill;
  auto report = run_gpureap({"report", "--help"}).out;
  EXPECT_NE(report.find("--processes N"), std::string::npos) << report;
  EXPECT_NE(report.find("to 12; default 5)"), std::string::npos) << report;
  auto reset = run_gpureap({"reset", "--help"}).out;
  EXPECT_NE(reset.find("(required)"), std::string::npos) << reset;
  auto run = run_gpureap({"run", "--help"}).out;
  EXPECT_NE(run.find("Usage: gpureap run [OPTIONS] -- COMMAND [ARGUMENTS...]"), std::string::npos)
      << run;
  EXPECT_NE(run.find("  124   --timeout ended the job"), std::string::npos) << run;
  auto top = run_gpureap({"--help"}).out;
  EXPECT_NE(top.find("--proc-root DIR"), std::string::npos) << top;
  EXPECT_NE(top.find("--tree"), std::string::npos) << top;
  auto doctor = run_gpureap({"doctor", "--help"}).out;
  EXPECT_NE(doctor.find("  2     critical findings"), std::string::npos) << doctor;
}

TEST(CliUsage, ATypoGetsDidYouMean) {
  auto r = run_gpureap({"doctr"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("gpureap: unknown subcommand `doctr`; did you mean `doctor`? Run "
                       "`gpureap --help` for the list"),
            std::string::npos)
      << r.err;
  r = run_gpureap({"ps", "--trea"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("gpureap: unknown option `--trea`; did you mean `--tree`? Run "
                       "`gpureap ps --help` for the options"),
            std::string::npos)
      << r.err;
  r = run_gpureap({"kill", "--dryrun", "1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("did you mean `--dry-run`?"), std::string::npos) << r.err;
  r = run_gpureap({"policy", "tset"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("did you mean `test`?"), std::string::npos) << r.err;
  // A global option, after the subcommand.
  r = run_gpureap({"ps", "--proc-rot", "/proc"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("did you mean `--proc-root`?"), std::string::npos) << r.err;
  // Nothing close: no guess.
  r = run_gpureap({"ps", "--frobnicate"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.find("did you mean"), std::string::npos) << r.err;
}

TEST(CliUsage, AUsageErrorExitsWithItsCommandsUsageStatusNeverAVerdict) {
  // doctor's 2 says "critical findings": its usage errors are 3, as its help says.
  auto r = run_gpureap({"doctor", "--bogus"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("unknown option `--bogus`"), std::string::npos) << r.err;
  r = run_gpureap({"doctor", "--gpu"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  r = run_gpureap({"--no-color", "doctor", "--proc-rot", "/proc"});  // a global option's typo
  EXPECT_EQ(r.exit_code, 3) << r.err;
  auto help = run_gpureap({"doctor", "--help"}).out;
  EXPECT_NE(help.find("  3     doctor could not run: a usage error"), std::string::npos) << help;
  // Every other command keeps 2, gpureap itself included.
  for (const char* command : {"ps", "kill", "reset", "cluster", "audit", "report", "top"}) {
    r = run_gpureap({command, "--bogus"});
    EXPECT_EQ(r.exit_code, 2) << command << ": " << r.err;
  }
  EXPECT_EQ(run_gpureap({"--bogus"}).exit_code, 2);
}

TEST(CliUsage, RunSaysItsOptionsGoBeforeTheDoubleDash) {
  auto r = run_gpureap({"--no-color", "run", "--grace", "5s", "echo", "hi", "--lr", "3"});
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_EQ(r.out, "") << "the job did not run";
  EXPECT_NE(r.err.find("gpureap: `--lr` is not an option of gpureap: gpureap's options go "
                       "before `--`, the command and its arguments after it:\n"
                       "  gpureap --no-color run --grace 5s -- echo hi --lr 3\n"),
            std::string::npos)
      << r.err;
  // A mistyped option of gpureap's own, before the command: a typo, not the command's.
  r = run_gpureap({"run", "--grce", "5s", "echo", "hi"});
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_NE(r.err.find("did you mean `--grace`?"), std::string::npos) << r.err;
  // Written as the message says, it runs.
  r = run_gpureap({"--nvml-library", kNoNvml, "run", "-q", "--", "echo", "hi", "--lr", "3"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "hi --lr 3\n");
}

TEST(CliUsage, MissingPartsAreNamedInWords) {
  auto r = run_gpureap({"run"});
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_NE(r.err.find("gpureap: a command is required: `gpureap run [OPTIONS] -- COMMAND "
                       "[ARGUMENTS...]`"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("cMD"), std::string::npos) << r.err;
  r = run_gpureap({"run", "--grace"});
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_NE(r.err.find("`--grace` needs a value"), std::string::npos) << r.err;
  r = run_gpureap({"kill", "--tree", "--group", "1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("`--tree` and `--group` cannot be used together"), std::string::npos)
      << r.err;
  r = run_gpureap({"reset"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("`--gpu` is required"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace gpureap::testing

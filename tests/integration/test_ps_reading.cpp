// Reading `gpureap ps` as a user does: choosing what to see (--pid, --user, --sort, --compact),
// the locale, the new columns in the JSON, and the argument parser's errors in gpureap's voice.
#include <gtest/gtest.h>
#include <unistd.h>

#include <regex>
#include <sstream>

#include "support.h"

namespace gpureap::testing {
namespace {

TEST(PsReading, APidSelectsItsRowInTheTableAndTheJson) {
  FakeDevRoot dev;
  Child a = holding(dev, "nvidia0");
  Child b = holding(dev, "nvidia1");
  auto json =
      run_gpureap({"ps", "--json", "--dev-root", dev.path(), "--pid", std::to_string(b.pid())});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  auto snap = parse_output(json);
  ASSERT_EQ(snap["processes"].size(), 1u) << json.out;
  const auto& row = snap["processes"][0];
  EXPECT_EQ(row["pid"], b.pid());
  // The columns users expect, in the JSON too; the old fields stay.
  for (const char* k : {"cpu_percent", "cpu_time_seconds", "run_time_seconds", "rss_bytes"})
    EXPECT_TRUE(row.contains(k)) << k;
  EXPECT_GE(row["cpu_time_seconds"].get<double>(), 0.0);
  EXPECT_GT(row["rss_bytes"].get<long long>(), 0);

  auto table = run_gpureap({"ps", "--dev-root", dev.path(), "--pid", std::to_string(a.pid()),
                            "--user", std::to_string(::getuid()), "--sort", "memory"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("\n" + std::to_string(a.pid()) + " "), std::string::npos) << table.out;
  EXPECT_EQ(table.out.find("\n" + std::to_string(b.pid()) + " "), std::string::npos) << table.out;
  for (const char* col : {"CPU%", "RSS", "TIME"})
    EXPECT_NE(table.out.find(col), std::string::npos) << col << "\n" << table.out;
}

TEST(PsReading, AsciiUnderTheCLocale) {
  FakeDevRoot dev;
  Child a = holding(dev, "nvidia0");
  auto r = run_gpureap({"ps", "--tree", "--dev-root", dev.path()}, {"LC_ALL=C"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (unsigned char c : r.out) ASSERT_LT(c, 0x80) << r.out;
  auto utf8 = run_gpureap({"ps", "--tree", "--dev-root", dev.path()}, {"LC_ALL=C.UTF-8"});
  EXPECT_NE(utf8.out.find("└"), std::string::npos) << utf8.out;
}

// GPUREAP_TIMING=1: each phase's wall time on stderr, one line each, the output unchanged.
TEST(PsReading, TimingSaysWhereTheTimeGoes) {
  FakeDevRoot dev;
  Child a = holding(dev, "nvidia0");
  FakeNvml nvml(idle_gpus());
  auto env = nvml.env();
  env.push_back("GPUREAP_TIMING=1");
  const std::vector<std::string> args = {"ps", "--json", "--no-daemon", "--dev-root", dev.path()};
  auto r = run_gpureap(args, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(parse_output(r)["gpus"].size(), 2u) << r.out;
  for (const char* phase :
       {"nvml library load", "nvml init", "nvml gpu 0 queries", "nvml gpu 0 process lists",
        "nvml gpu 1 queries", "nvml gpu 1 process lists", "proc scan and driver read", "proc scan",
        "open-file comparison", "rendering", "nvml shutdown"})
    EXPECT_NE(r.err.find(std::string("gpureap: timing: ") + phase + ": "), std::string::npos)
        << phase << "\n"
        << r.err;
  std::istringstream lines(r.err);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("gpureap: timing: ", 0) != 0) continue;
    EXPECT_TRUE(
        std::regex_match(line, std::regex(R"(gpureap: timing: [a-z0-9 -]+: [0-9]+\.[0-9]{3} ms)")))
        << line;
  }
  auto quiet = run_gpureap(args, nvml.env());
  ASSERT_EQ(quiet.exit_code, 0) << quiet.err;
  EXPECT_EQ(quiet.err.find("timing"), std::string::npos) << quiet.err;
}

TEST(PsCli, ParseErrorsSpeakGpureapsVoice) {
  auto r = run_gpureap({"frobnicate"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown subcommand `frobnicate`; run `gpureap --help` for the list"),
            std::string::npos)
      << r.err;
  r = run_gpureap({"ps", "--pid", "abc"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("`abc` is not a PID"), std::string::npos) << r.err;
  r = run_gpureap({"ps", "--frob"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown option `--frob`; run `gpureap ps --help`"), std::string::npos)
      << r.err;
  r = run_gpureap({"ps", "--sort", "size"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("use one of pid, memory, age, user"), std::string::npos) << r.err;
  r = run_gpureap({"ps", "--compact", "--json"});
  EXPECT_EQ(r.exit_code, 2);
  // The root's footer is the root's: not repeated under each subcommand's help.
  const std::string footer = "Without a subcommand, gpureap runs `ps`.";
  EXPECT_NE(run_gpureap({"--help"}).out.find(footer), std::string::npos);
  for (const char* sub : {"ps", "doctor", "kill"}) {
    auto help = run_gpureap({sub, "--help"});
    EXPECT_EQ(help.exit_code, 0) << sub;
    EXPECT_EQ(help.out.find(footer), std::string::npos) << sub << "\n" << help.out;
  }
}

}  // namespace
}  // namespace gpureap::testing

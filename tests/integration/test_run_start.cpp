// `gpureap run`: starting CMD, and the exit statuses of failing to (125, 126, 127).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "support.h"

namespace gpureap::testing {
namespace {

std::vector<std::string> no_nvml(const TempDir& dir) {
  return {"--nvml-library", dir.file("no-such-libnvidia-ml.so.1")};
}

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::string write_file(const TempDir& dir, const std::string& name, const std::string& text,
                       mode_t mode) {
  std::string path = dir.file(name);
  std::ofstream(path) << text;
  ::chmod(path.c_str(), mode);
  return path;
}

TEST(RunStart, ExitStatusOfTheCommandIsPropagated) {
  TempDir dir;
  auto r = run_gpureap(with(no_nvml(dir), {"run", "--", "sh", "-c", "exit 42"}));
  EXPECT_EQ(r.exit_code, 42) << r.err;
}

TEST(RunStart, MissingCommandGives127) {
  TempDir dir;
  auto r = run_gpureap(with(no_nvml(dir), {"run", "--report", dir.file("report.json"), "--",
                                           "gpureap-test-no-such-command"}));
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_NE(r.err.find("cannot run `gpureap-test-no-such-command`: command not found"),
            std::string::npos)
      << r.err;
  auto report = nlohmann::json::parse(read_text(dir.file("report.json")));
  EXPECT_EQ(report["exit"]["code"], 127);
  EXPECT_EQ(report["exit"]["cause"], "not-found");
  EXPECT_TRUE(report["pid"].is_null());
}

TEST(RunStart, MissingPathGives127) {
  TempDir dir;
  auto r = run_gpureap(with(no_nvml(dir), {"run", "--", dir.file("absent")}));
  EXPECT_EQ(r.exit_code, 127) << r.err;
}

TEST(RunStart, NotExecutableGives126) {
  TempDir dir;
  std::string path = write_file(dir, "data", "#!/bin/sh\nexit 0\n", 0644);
  auto r = run_gpureap(with(no_nvml(dir), {"run", "--", path}));
  EXPECT_EQ(r.exit_code, 126);
  EXPECT_NE(r.err.find("permission denied"), std::string::npos) << r.err;
  auto dir_run = run_gpureap(with(no_nvml(dir), {"run", "--", dir.path()}));
  EXPECT_EQ(dir_run.exit_code, 126) << dir_run.err;
}

TEST(RunStart, MissingInterpreterGives126) {
  TempDir dir;
  std::string path = write_file(dir, "script", "#!/nonexistent/interpreter\n", 0755);
  auto r = run_gpureap(with(no_nvml(dir), {"run", "--", path}));
  EXPECT_EQ(r.exit_code, 126) << r.err;
  EXPECT_NE(r.err.find("#! line"), std::string::npos) << r.err;
}

TEST(RunStart, ScriptWithoutInterpreterLineRunsUnderSh) {
  TempDir dir;
  std::string path = write_file(dir, "script", "exit $(( $1 + 1 ))\n", 0755);
  auto r = run_gpureap(with(no_nvml(dir), {"run", "--", path, "2"}));
  EXPECT_EQ(r.exit_code, 3) << r.err;
}

TEST(RunStart, ArgumentsAfterDashDashAreUntouched) {
  TempDir dir;
  FakeDevRoot dev;
  // Global options before `run` still apply; everything after `--` is the job's.
  auto r = run_gpureap({"--dev-root", dev.path(), "--nvml-library", dir.file("none"), "run",
                        "--quiet", "--", "sh", "-c", "printf '%s|' \"$@\"", "sh", "--json",
                        "--grace", "x", "--", "run", ""});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "--json|--grace|x|--|run||");
  EXPECT_EQ(r.err, "") << "--quiet prints no summary";
}

TEST(RunStart, GpureapsOwnFailuresGive125) {
  TempDir dir;
  std::vector<std::vector<std::string>> cases = {
      {"run", "--grace", "soon", "--", "true"},
      {"run", "--timeout", "0", "--", "true"},
      {"run", "--sample", "1ms", "--", "true"},
      {"run", "--no-such-option", "--", "true"},
      {"run"},
      {"run", "--json", "--", "true"},
      {"run", "--report", dir.file("no/such/dir/report.json"), "--", "true"},
      {"--proc-root", dir.file("absent"), "run", "--", "true"},
      // A directory that is not a live procfs: the job's processes could not be found.
      {"--proc-root", dir.path(), "run", "--", "true"},
  };
  for (const auto& args : cases) {
    auto r = run_gpureap(with(no_nvml(dir), args));
    std::string joined;
    for (const auto& a : args) joined += a + " ";
    EXPECT_EQ(r.exit_code, 125) << joined << "\n" << r.err;
    EXPECT_FALSE(r.err.empty()) << joined;
  }
}

}  // namespace
}  // namespace gpureap::testing

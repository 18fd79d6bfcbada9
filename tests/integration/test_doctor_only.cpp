// `gpureap doctor --only CODES` and `--gpu N` for a GPU that does not exist: what scripts
// (the Slurm prolog and epilog) rely on to ask one question by exit status.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <set>

#include "support.h"

namespace gpureap::testing {
namespace {

using nlohmann::json;

class DoctorOnly : public ::testing::Test {
 protected:
  void SetUp() override { REQUIRE_DOUBLE(); }

  RunResult doctor(std::vector<std::string> extra) {
    std::vector<std::string> args{"doctor",    "--json",   "--dev-root",
                                  dev_.path(), "--settle", "300ms"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_gpureap(args, nvml_.env());
  }

  static std::set<std::string> codes(const json& doc) {
    std::set<std::string> out;
    for (const auto& f : doc["findings"]) out.insert(f["code"].get<std::string>());
    return out;
  }

  FakeDevRoot dev_;
  FakeNvml nvml_{json::object()};
};

// GPU 0: a stopped holder (warning); GPU 1: memory of a gone PID nobody keeps (critical when
// the view is complete, a warning otherwise).
TEST_F(DoctorOnly, KeepsOnlyTheNamedCodesAndExitsByThem) {
  Child stopped = holding(dev_, "nvidia0");
  ASSERT_EQ(::kill(stopped.pid(), SIGSTOP), 0);
  ASSERT_TRUE(wait_for_state(stopped.pid(), 'T'));
  nvml_.write(
      {{"gpus",
        {{{"minor", 0}, {"processes", {{{"pid", stopped.pid()}, {"used_bytes", 2 * GiB}}}}},
         {{"minor", 1},
          {"processes", {{{"pid", dead_pid()}, {"used_bytes", 4 * GiB}, {"leaked", true}}}}}}}});

  auto all = doctor({});
  auto everything = parse_output(all);
  EXPECT_TRUE(codes(everything).count("stopped-holder")) << all.out;

  auto r = doctor({"--only", "stopped-holder"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(codes(parse_output(r)), std::set<std::string>{"stopped-holder"});

  r = doctor({"--only", "no-such-process,leaked-memory", "--gpu", "1"});
  auto ghosts = parse_output(r);
  ASSERT_EQ(ghosts["findings"].size(), 1u) << r.out;
  const auto& f = ghosts["findings"][0];
  EXPECT_TRUE(f["code"] == "leaked-memory" || f["code"] == "no-such-process") << f;
  EXPECT_EQ(f["memory_bytes"], 4 * GiB);
  EXPECT_EQ(r.exit_code, f["severity"] == "critical" ? 2 : 1) << r.err;

  r = doctor({"--only", "no-such-process,leaked-memory", "--gpu", "0"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(parse_output(r)["findings"].empty()) << r.out;

  ::kill(stopped.pid(), SIGCONT);
}

TEST_F(DoctorOnly, AnUnknownCodeIsAnErrorNotHealth) {
  nvml_.write({{"gpus", {json::object()}}});
  auto r = doctor({"--only", "leaked-memory,leaked-memroy"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("unknown finding code \"leaked-memroy\""), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no-such-process"), std::string::npos)
      << "the valid codes are listed: " << r.err;
}

TEST_F(DoctorOnly, AGpuTheDriverDoesNotReportIsAnError) {
  nvml_.write({{"gpus", {json::object(), json::object()}}});
  auto r = doctor({"--gpu", "2"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("GPU 2 does not exist"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("this machine has 2 GPUs, 0 to 1"), std::string::npos) << r.err;
  EXPECT_EQ(doctor({"--gpu", "1"}).exit_code, 0);
}

}  // namespace
}  // namespace gpureap::testing

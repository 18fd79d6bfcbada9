// One-shot commands over a driver that stops answering (the NVML test double's block_call):
// none waits forever; each shows what /proc alone shows, says the driver did not answer, and
// exits 4. A shutdown that hangs does not keep the output from stdout.
#include <gtest/gtest.h>

#include "support.h"

namespace gpureap::testing {
namespace {

using nlohmann::json;

json timeout_scenario(const std::string& call, json processes = json::array()) {
  json s = {{"gpus",
             {{{"name", "NVIDIA H200"},
               {"uuid", "GPU-0000"},
               {"minor", 0},
               {"total_bytes", 80 * GiB},
               {"processes", processes}}}}};
  if (!call.empty()) s["block_call"] = call;
  return s;
}

class DriverTimeout : public ::testing::TestWithParam<std::string> {
 protected:
  FakeDevRoot dev_;
};

TEST_P(DriverTimeout, OneShotCommandsAnswerFromProcAloneAndExitFour) {
  REQUIRE_DOUBLE();
  Child job = holding(dev_, "nvidia0");
  FakeNvml nvml(timeout_scenario(GetParam(), {{{"pid", job.pid()}, {"used_bytes", 2 * GiB}}}));
  std::vector<std::string> common{"--dev-root", dev_.path(), "--driver-timeout", "300ms"};
  auto with = [&](std::vector<std::string> args) {
    args.insert(args.end(), common.begin(), common.end());
    return args;
  };

  auto ps = run_gpureap(with({"ps", "--json"}), nvml.env());
  EXPECT_EQ(ps.exit_code, 4) << ps.err;
  EXPECT_NE(ps.err.find("did not answer within 300ms"), std::string::npos) << ps.err;
  auto snap = parse_output(ps);
  EXPECT_EQ(snap["backend"]["available"], false);
  EXPECT_FALSE(row_of(snap, job.pid()).is_null()) << "the holder, from /proc alone";

  auto table = run_gpureap(with({"ps", "--no-color"}), nvml.env());
  EXPECT_EQ(table.exit_code, 4);
  EXPECT_NE(table.out.find(std::to_string(job.pid())), std::string::npos) << table.out;

  auto doctor = run_gpureap(with({"doctor", "--json", "--settle", "0s"}), nvml.env());
  EXPECT_EQ(doctor.exit_code, 4) << doctor.err;
  EXPECT_NE(parse_output(doctor)["findings"].dump().find("driver-not-answering"), std::string::npos)
      << doctor.out;

  auto kill =
      run_gpureap(with({"kill", "--json", "--dry-run", std::to_string(job.pid())}), nvml.env());
  EXPECT_EQ(kill.exit_code, 4) << kill.err;
  EXPECT_EQ(parse_output(kill)["plan"]["targets"].size(), 1u);
  EXPECT_TRUE(is_alive(job.pid()));

  auto reset = run_gpureap(with({"reset", "--gpu", "0", "--yes"}), nvml.env());
  EXPECT_EQ(reset.exit_code, 4) << reset.err;
  EXPECT_NE(reset.err.find("not resetting GPU 0"), std::string::npos) << reset.err;
}

INSTANTIATE_TEST_SUITE_P(Calls, DriverTimeout,
                         ::testing::Values("nvmlInit", "nvmlDeviceGetComputeRunningProcesses",
                                           "nvmlDeviceGetMemoryInfo", "nvmlDeviceGetCount"));

TEST(DriverTimeoutShutdown, AShutdownThatHangsDoesNotKeepTheOutput) {
  REQUIRE_DOUBLE();
  FakeDevRoot dev;
  FakeNvml nvml(timeout_scenario("nvmlShutdown"));
  auto ps = run_gpureap({"ps", "--json", "--dev-root", dev.path(), "--driver-timeout", "300ms"},
                        nvml.env());
  EXPECT_EQ(ps.exit_code, 0) << ps.err;
  EXPECT_EQ(parse_output(ps)["backend"]["available"], true);
}

TEST(DriverTimeoutOption, AMalformedTimeoutIsAUsageError) {
  auto r = run_gpureap({"ps", "--driver-timeout", "soon"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--driver-timeout"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace gpureap::testing

// NVML that gpureap cannot load because it is out of file descriptors (`ulimit -n`), with the
// NVML test double as the library: the backend says so, with the limit and how to raise it, and
// is `out-of-resources`, never a missing library with "install the NVIDIA driver" or "check the
// path". A library that loaded and then had too few descriptors to initialise is told the same
// way, never as a driver that is not loaded. Which limit leaves the load or the init without a
// descriptor depends on how many the scan's threads hold at that moment, so the limits around
// it are tried until each happened.
#include <gtest/gtest.h>

#include "../unit/skip_sanitized.h"
#include "support.h"

namespace gpureap::testing {
namespace nvml_fd_limit {

// `gpureap ps --json` with a soft and hard limit of `limit` open files, set in the child.
RunResult ps_under_limit(int limit, const FakeDevRoot& dev, const FakeNvml& nvml) {
  std::vector<std::string> env = {"PATH=/usr/bin:/bin", "NO_COLOR=1", "GPUREAP_BPF=0"};
  for (const auto& e : nvml.env()) env.push_back(e);
  return run_gpureap_with_fd_limit(limit, {"ps", "--json", "--dev-root", dev.path()}, env);
}

TEST(NvmlFdLimit, ALoadWithoutADescriptorSaysSoAndHowToRaiseTheLimit) {
  REQUIRE_DOUBLE();
  SKIP_UNDER_SANITIZERS();
  FakeDevRoot dev;  // has nvidia0: a failed load is never "no NVIDIA GPU here"
  FakeNvml nvml(idle_gpus());
  int short_loads = 0, short_inits = 0;
  for (int round = 0; round < 12 && (short_loads == 0 || short_inits == 0); ++round)
    for (int limit = 5; limit <= 12; ++limit) {
      SCOPED_TRACE("ulimit -n " + std::to_string(limit));
      auto r = ps_under_limit(limit, dev, nvml);
      if (r.out.empty()) continue;  // it could not start the scan, and said so
      auto doc = parse_output(r);
      for (const auto& b : doc["backends"]) {
        if (b["name"] != "nvml" || b["available"] == true) continue;
        const std::string error = b["error"].get<std::string>();
        if (error.find("could not be loaded") == std::string::npos) {
          // Loaded, then its init had too few descriptors to open the driver's control device
          // (the double's stand-in for it, or its scenario): whatever code the library returned,
          // that is what failed, never the driver.
          ++short_inits;
          EXPECT_EQ(b["error_code"], "out-of-resources") << error;
          EXPECT_EQ(b["shortage"], "own-descriptors") << error;
          EXPECT_NE(error.find("library could not initialise"), std::string::npos) << error;
          EXPECT_NE(error.find("file descriptors open"), std::string::npos) << error;
          EXPECT_NE(error.find("ulimit -n"), std::string::npos) << error;
          EXPECT_NE(error.find("LimitNOFILE="), std::string::npos) << error;
          EXPECT_EQ(error.find("is not loaded"), std::string::npos) << error;
          EXPECT_EQ(error.find("modprobe"), std::string::npos) << error;
          continue;
        }
        ++short_loads;
        EXPECT_EQ(b["error_code"], "out-of-resources") << error;
        EXPECT_NE(error.find("no file descriptor"), std::string::npos) << error;
        EXPECT_NE(error.find("ulimit -n"), std::string::npos) << error;
        EXPECT_NE(error.find("LimitNOFILE="), std::string::npos) << error;
        EXPECT_EQ(error.find("install the NVIDIA driver"), std::string::npos) << error;
        EXPECT_EQ(error.find("check the path"), std::string::npos) << error;
      }
    }
  EXPECT_GT(short_loads, 0) << "no limit left the library load without a descriptor";
  EXPECT_GT(short_inits, 0) << "no limit left the library's init without a descriptor";
  // With plenty, the double loads.
  auto r = ps_under_limit(256, dev, nvml);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto doc = parse_output(r);
  for (const auto& b : doc["backends"]) {
    if (b["name"] == "nvml") {
      EXPECT_EQ(b["available"], true) << b.dump();
    }
  }
}

}  // namespace nvml_fd_limit
}  // namespace gpureap::testing

#pragma once
// Shared by the tests that load the NVML test double (tests/fake_nvml) through the real
// backend: scenario files in a private temp dir, the double's paths, and real child
// processes to act as context holders.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backend/nvml/nvml_backend.h"
#include "byte_units.h"
#include "core/gpu.h"

#ifndef FAKE_NVML_DIR
#error "FAKE_NVML_DIR must name the build folder of tests/fake_nvml"
#endif

namespace gpureap::testing {

// "" for the full double, or a variant folder: "no_v3", "v1_only", "no_memory_v2".
inline std::string fake_nvml_library(const std::string& variant = "") {
  return std::string(FAKE_NVML_DIR) + (variant.empty() ? "" : "/" + variant) + "/libnvidia-ml.so.1";
}

class FakeNvmlFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/gpureap-fake-nvml-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    scenario_path_ = dir_ + "/scenario.json";
  }

  void TearDown() override {
    for (pid_t child : children_) {
      kill(child, SIGKILL);
      waitpid(child, nullptr, 0);
    }
    unsetenv("FAKE_NVML_SCENARIO");
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  // Replaces the scenario atomically (new inode), so a running double always notices.
  void write_scenario(const nlohmann::json& scenario) {
    const std::string temp = scenario_path_ + ".tmp";
    std::ofstream(temp) << scenario.dump(2);
    ASSERT_EQ(std::rename(temp.c_str(), scenario_path_.c_str()), 0);
    setenv("FAKE_NVML_SCENARIO", scenario_path_.c_str(), 1);
  }

  std::unique_ptr<backend::GpuBackend> backend(const std::string& variant = "") {
    backend::nvml::NvmlOptions options;
    options.library_path = fake_nvml_library(variant);
    return backend::nvml::make_nvml_backend(options);
  }

  core::BackendReport collect(const std::string& variant = "") {
    return backend(variant)->collect();
  }

  // A real process that sleeps until killed.
  pid_t spawn_sleeper() {
    const pid_t child = fork();
    if (child == 0) {
      for (;;) pause();
    }
    EXPECT_GT(child, 0);
    children_.push_back(child);
    return child;
  }

  // Kills a child and waits until it is a zombie, without reaping it.
  void kill_leaving_zombie(pid_t child) {
    ASSERT_EQ(kill(child, SIGKILL), 0);
    siginfo_t info{};
    ASSERT_EQ(waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOWAIT), 0);
  }

  void kill_and_reap(pid_t child) {
    ASSERT_EQ(kill(child, SIGKILL), 0);
    ASSERT_EQ(waitpid(child, nullptr, 0), child);
    std::erase(children_, child);
  }

  std::string dir_;
  std::string scenario_path_;
  std::vector<pid_t> children_;
};

inline const core::DriverProcess* find_process(const core::Gpu& gpu, pid_t pid) {
  for (const auto& process : gpu.processes) {
    if (process.pid == pid) return &process;
  }
  return nullptr;
}

inline bool contains(const std::optional<std::string>& text, const std::string& part) {
  return text && text->find(part) != std::string::npos;
}

}  // namespace gpureap::testing

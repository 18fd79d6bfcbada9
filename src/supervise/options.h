#pragma once
// What `gpureap run` was asked to do.
#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace gpureap::supervise {

struct RunOptions {
  std::vector<std::string> command;                   // CMD ARGS, passed to execve untouched
  std::chrono::milliseconds grace{30'000};            // SIGTERM .. SIGKILL
  std::optional<std::chrono::milliseconds> timeout;   // end the job after this long
  bool keep_descendants = false;                      // leave processes alive after CMD exits
  std::chrono::milliseconds release_timeout{60'000};  // how long to wait for memory to return
  std::chrono::milliseconds sample_interval{1'000};   // 0: no periodic GPU sampling
  std::optional<std::string> report_path;             // --report FILE
  bool quiet = false;                                 // no summary on stderr
};

}  // namespace gpureap::supervise

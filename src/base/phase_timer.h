#pragma once
// Where a command's time goes: with GPUREAP_TIMING set to a non-empty value other than "0",
// each phase a Phase object spans prints its wall time to stderr when it ends, one line each:
//   gpureap: timing: nvml gpu 0 process lists: 0.412 ms
// Unset, a Phase reads no clock and prints nothing. The variable is read once per process.
#include <chrono>
#include <string>

namespace gpureap::base {

bool timing_enabled();

// The line a phase prints (without the newline), for the kit and the tests that read it.
std::string timing_line(const std::string& phase, std::chrono::nanoseconds took);

class Phase {
 public:
  explicit Phase(std::string name);
  ~Phase();
  Phase(const Phase&) = delete;
  Phase& operator=(const Phase&) = delete;

 private:
  std::string name_;  // empty while timing is off
  std::chrono::steady_clock::time_point started_;
};

}  // namespace gpureap::base

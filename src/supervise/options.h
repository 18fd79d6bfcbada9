#pragma once
// What `gpureap run` was asked to do.
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/process.h"

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
  // Told once, just before the teardown's first SIGTERM, which processes it is about to end:
  // the cli tells the node's daemon (cli/announce.h), whose audit log and report then say so.
  std::function<void(const std::vector<core::ProcessStat>&)> announce_teardown;
  // --fail-fast: when a process of the job exits abnormally (a signal, a non-zero status) while
  // CMD runs, end the whole job this long after, unless it ended on its own meanwhile (a
  // launcher that tears its job down itself) or none of its processes holds a GPU file then.
  std::optional<std::chrono::milliseconds> fail_fast;
};

}  // namespace gpureap::supervise

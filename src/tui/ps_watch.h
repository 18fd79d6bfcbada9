#pragma once
// `gpureap ps --watch [INTERVAL]`: the ps screen re-rendered in place every interval (on a
// terminal; else one screen after another), or one snapshot per line (JSON lines) for logging
// pipelines.
#include <chrono>
#include <string>

#include "collect/collector.h"
#include "output/ps_select.h"

namespace gpureap::tui {

struct PsWatchOptions {
  std::chrono::milliseconds interval{2000};
  std::string every = "2s";  // the interval as typed, for the title line
  bool tree = false;
  bool json = false;  // JSON lines
  bool no_color = false;
  bool unicode = true;         // the locale speaks UTF-8; otherwise ASCII
  bool compact = false;        // one line per GPU
  output::PsSelection select;  // --gpu, --user, --pid, --sort
};

// Collects (on the sampling engine's thread) and shows every interval until SIGINT, SIGTERM or
// SIGHUP, or until stdout's reader goes away. A slow collection delays the next one, never
// piles them up. False when a collection stuck in the driver was left behind: the program
// should then leave with _exit.
bool watch_ps(const collect::Collector& collector, const PsWatchOptions& options);

}  // namespace gpureap::tui

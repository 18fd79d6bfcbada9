#pragma once
// The figures users expect beside a process in `ps`, `top` and the JSON: its CPU use, its
// resident memory and how long it has run. CPU % is the average over the process's life
// (CPU time used / time since it started), as procps `ps` computes it: one snapshot gives it,
// and the same process shows the same figure in every view.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "core/snapshot.h"

namespace gpureap::output {

struct ProcessFigures {
  std::optional<double> cpu_percent;             // may exceed 100 with several threads
  std::optional<std::chrono::milliseconds> cpu;  // user + system CPU time so far
  std::optional<uint64_t> rss_bytes;             // resident set size
  std::optional<std::chrono::seconds> run_time;  // since it started, at the snapshot's time
};

ProcessFigures process_figures(const core::Snapshot& snapshot, const core::HostProcess& process);

// "12.5" (one decimal below 100, none above), "-" when unknown.
std::string cpu_percent_text(const std::optional<double>& percent);
// CPU time as ps(1) prints TIME: "0:07", "12:34", "3:02:10", "2-03:04:05"; "-" when unknown.
std::string cpu_time_text(const std::optional<std::chrono::milliseconds>& cpu);
// "1.2G", "512M"; "-" when unknown.
std::string rss_text(const std::optional<uint64_t>& bytes);

}  // namespace gpureap::output

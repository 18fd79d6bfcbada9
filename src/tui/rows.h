#pragma once
// The rows of `top`: one per row of the joined view, with every cell already formatted and
// terminal-safe, plus the facts sorting and filtering need (numbers, flags).
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/snapshot.h"

namespace gpureap::tui {

// Who runs `top`: decides which rows the user can act on.
struct Viewer {
  uid_t uid = 0;
  uid_t euid = 0;
  bool privileged() const { return euid == 0; }
  static Viewer current();
};

struct TopRow {
  pid_t pid = 0;
  bool context = false;  // not a row of the joined view: a tree ancestor shown for context
  bool gone = false;     // listed by the driver, absent from /proc
  pid_t ppid = 0;
  pid_t pgid = 0;
  std::string user;  // "-" when unknown
  std::optional<uid_t> uid;
  std::vector<unsigned> gpus;
  // Parallel to `gpus`: the GPU instance it is in there (core::row_instance), if any.
  std::vector<std::optional<unsigned>> gpu_instances;
  // The GPUs it is on by the one scope rule (core::gpus_of), which the `g` filter follows as
  // `ps --gpu` and `kill --gpu` do: a ghost's keeper is on the ghost's GPU though it is listed
  // nowhere.
  std::vector<unsigned> on_gpus;
  std::optional<uint64_t> memory;  // sum of the known listed memory
  bool memory_partial = false;     // some listing had no figure
  std::optional<unsigned> sm;      // highest SM utilisation over its GPUs
  // output/process_figures.h: CPU % over its life, resident memory, CPU time used.
  std::optional<double> cpu_percent;
  std::optional<uint64_t> rss;
  std::optional<std::chrono::milliseconds> cpu;
  char state = '?';
  std::optional<std::chrono::seconds> age;
  std::string container;     // "-" when none
  std::string command;       // output::command_text: the short label the table shows
  std::string command_line;  // the whole command line: the filter and the detail read it
  std::string anomalies;     // space-separated names
  bool ghost = false;        // core::ProcessRow::is_ghost()
  bool stuck = false;        // stopped or uninterruptible
  bool anomalous = false;
  bool actionable = true;  // the viewer may signal it (root, or its owner)

  std::string state_text() const;   // running, sleeping, ..., gone
  std::string gpu_text() const;     // "0,1", "0/3" (GPU instance 3 of GPU 0) or "-"
  std::string memory_text() const;  // "8.0 GiB", "n/a", "-"
  std::string sm_text() const;      // "55" or "-"
  std::string age_text() const;     // "2h13m" or "-"
  std::string cpu_text() const;     // "12.5" or "-"
  std::string rss_text() const;     // "1.2G" or "-"
  std::string time_text() const;    // "1:02:03" or "-"
};

TopRow make_row(const core::Snapshot& s, const core::ProcessRow& row, const Viewer& viewer);
// A process that is not a row (an ancestor in tree mode).
TopRow make_context_row(const core::Snapshot& s, const core::HostProcess& p, const Viewer& viewer);
// Every row of the snapshot, in its order (by pid).
std::vector<TopRow> make_rows(const core::Snapshot& s, const Viewer& viewer);

}  // namespace gpureap::tui

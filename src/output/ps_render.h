#pragma once
// Everything `gpureap ps` prints for one snapshot (output/command_output.h): its own scan's and
// the daemon's (sent as evidence, daemon/local_protocol.h) render through here on the command's
// side, so what a daemon answers is what `ps` would have printed itself.
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "core/snapshot.h"
#include "output/command_output.h"
#include "output/ps_select.h"

namespace gpureap::output {

enum class PsFormat { Table, Json, Csv };

// The exit status of a `ps` whose GPU driver did not answer; the cli's kExitDriverTimeout.
inline constexpr int kPsExitDriverTimeout = 4;
// The exit status of a `ps` whose selection names no such user or GPU, or whose holder scan
// failed (gpureap out of file descriptors or memory); the cli's kExitUsage.
inline constexpr int kPsExitUsage = 2;

struct PsRenderOptions {
  PsFormat format = PsFormat::Table;
  bool tree = false;
  std::optional<size_t> width;  // terminal columns, when known
  bool color = false;
  // Where the snapshot came from: the daemon's latest sample, this old; empty: the command's
  // own scan. The table ends with a dim line naming the daemon, the JSON has "source".
  DaemonAge daemon_age;
  PsSelection select;    // --gpu, --user, --pid, --sort
  bool compact = false;  // --compact: one line per GPU
  bool unicode = true;   // the locale speaks UTF-8; otherwise the table is ASCII
  // --verbose: also the notes that repeat on every run about what no privilege can reveal (a
  // sandbox's init whose open files the kernel hides).
  bool verbose = false;
};

// The note about a process the kernel protects from inspection, said only with --verbose.
bool is_protected_process_note(const std::string& warning);

// Its exit status: 0, kPsExitUsage (the holder scan failed), or kPsExitDriverTimeout.
using PsRendered = CommandOutput;

// --verbose's notes on what the views leave out as no news here: a backend with no GPU of its
// kind (and why), GPUs named by their PCI ids for want of the PCI ID database.
std::vector<std::string> silent_backend_notes(const core::DriverReading& drivers);

PsRendered render_ps_command(const core::Snapshot& snapshot, const PsRenderOptions& options);

// What a command says on stderr when a driver did not answer for this snapshot (each such
// backend's error, then why the output is /proc alone); empty when every driver answered.
std::vector<std::string> driver_timeout_lines(const core::Snapshot& snapshot);

}  // namespace gpureap::output

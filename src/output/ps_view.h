#pragma once
// The human `gpureap ps` screen and its CSV form.
#include <optional>
#include <string>

#include "core/snapshot.h"
#include "output/ps_gpus.h"
#include "output/ps_select.h"
#include "output/style.h"

namespace gpureap::output {

struct PsViewOptions {
  bool tree = false;
  std::optional<size_t> width;  // terminal width, when known; none: nothing is cut
  bool unicode = true;          // the terminal speaks UTF-8; otherwise ASCII only
  PsSort sort = PsSort::Pid;    // within each GPU's group of rows
  bool compact = false;         // one line per GPU instead of the tables
};

std::string render_process_table(const core::Snapshot& s, const Style& style,
                                 const PsViewOptions& options);
// One line per GPU with ghost memory, then the next useful command.
std::string render_summary(const core::Snapshot& s, const Style& style);
std::string render_ps(const core::Snapshot& s, const Style& style, const PsViewOptions& options);
std::string render_ps_csv(const core::Snapshot& s);

// Words for a process state letter: running, sleeping, stopped, zombie, ...
std::string state_word(char state);
// The command to show: the program's name (argv[0] without its directory), then its
// arguments, or [comm] when argv is empty (kernel thread, zombie).
std::string command_text(const core::ProcessRow& row);

}  // namespace gpureap::output

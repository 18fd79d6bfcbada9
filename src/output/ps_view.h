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
  // What --pid, --user and --gpu narrowed the rows to (scope_words): an empty table names it.
  std::string scope;
};

std::string render_process_table(const core::Snapshot& s, const Style& style,
                                 const PsViewOptions& options);
// One line per GPU with ghost memory, then the next useful command; wrapped at the width
// (never inside a command), when there is one. `scope`: as PsViewOptions's.
std::string render_summary(const core::Snapshot& s, const Style& style,
                           std::optional<size_t> width = std::nullopt,
                           const std::string& scope = {});
std::string render_ps(const core::Snapshot& s, const Style& style, const PsViewOptions& options);
std::string render_ps_csv(const core::Snapshot& s);

// Words for a process state letter: running, sleeping, stopped, zombie, ...
std::string state_word(char state);
// The command to show in a table: output/command_label.h's short label (the program, what it
// runs, the name it gave itself), or [comm] when argv is empty (kernel thread, zombie).
std::string command_text(const core::ProcessRow& row);
// What a row is to a server of other processes' GPU work: "<WorkServer::name> · 2 clients", "client
// of 4000"; empty for any other row. command_text starts with it, in brackets.
std::string role_text(const core::ProcessRow& row);
// The whole command line (the program's name without its directory, every argument), for the
// CSV, filters and details.
std::string command_line(const core::ProcessRow& row);

}  // namespace gpureap::output

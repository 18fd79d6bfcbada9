#pragma once
// What `ps` shows of a snapshot: the rows of some GPUs, users or PIDs (`--gpu`, `--user`,
// `--pid`), and in which order (`--sort`). Rows stay grouped by GPU in the table: a process
// is shown with the first GPU it uses, and those that use none come last.
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "core/gpu_index.h"
#include "core/result.h"
#include "core/snapshot.h"

namespace gpureap::output {

enum class PsSort { Pid, Memory, Age, User };

core::Result<PsSort> parse_ps_sort(const std::string& word);
const char* to_string(PsSort sort);

struct PsSelection {
  std::vector<unsigned> gpus;      // empty: every GPU
  std::vector<std::string> users;  // names or numeric uids; empty: everyone
  std::vector<pid_t> pids;         // empty: every process
  PsSort sort = PsSort::Pid;
  // --gpu N/G (GPU N's GPU instance G) or a GPU's or instance's UUID, as typed
  // (core::parse_gpu_ref): resolved against the snapshot shown, so a daemon resolves them too.
  std::vector<std::string> gpu_places;

  bool narrows() const {
    return !gpus.empty() || !users.empty() || !pids.empty() || !gpu_places.empty();
  }
};

// A selection that cannot mean anything on this snapshot: a user the passwd database does not
// know, a GPU that does not exist (or that no driver can name). Checked before anything is shown:
// a typo is an error, never an empty table.
std::optional<core::ScopeError> check_selection(const core::Snapshot& snapshot,
                                                const PsSelection& selection);

// Splits --gpu's values: bare indices into `gpus`, the rest (N/G, UUIDs) into `gpu_places`; an
// error names the first value that is no GPU.
core::Result<bool> add_gpu_values(PsSelection& selection, const std::vector<std::string>& values);

// The snapshot with only the selected rows (and, with --gpu, only those GPUs). A row is on a
// GPU, or in an instance, as core::in_place says; only the selected instances' lines are kept
// under their GPU (whose own figures stay the whole GPU's).
core::Snapshot select_rows(const core::Snapshot& snapshot, const PsSelection& selection);

// What the selection narrows the view to, as words after "No process": "of user nobody",
// "on GPU 1", "with PID 42", joined; empty when it narrows nothing. The values are the user's
// own, made terminal-safe.
std::string scope_words(const PsSelection& selection);

// The rows' order in the table: by the first GPU each uses, then by `sort` (memory and age:
// largest first), then by PID.
std::vector<const core::ProcessRow*> table_order(const core::Snapshot& snapshot, PsSort sort);

}  // namespace gpureap::output

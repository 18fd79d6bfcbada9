#pragma once
// Which device-file fds are the same open file description (`struct file`). A forked child
// shares its parent's; a process that opens the file itself gets a new one. The driver frees
// a GPU context when the last reference to its open file description goes, so this is the
// exact "keeps the context of" relation. kcmp(KCMP_FILE) compares two fds across processes;
// it needs ptrace access to both (root, or the caller's own processes).
#include <optional>
#include <string>
#include <vector>

#include "core/process.h"

namespace gpureap::procfs {

struct OpenFileGrouping {
  // Set when some holds got no open-file id: kcmp is missing or refused, or the procfs does
  // not name gpureap's own processes (a fixture tree, another namespace). Says why.
  std::optional<std::string> incomplete;
  size_t comparisons = 0;  // kcmp calls made
};

// Splits the GPU-file holds (one GPU's file: its own node, DRM render and card nodes) of
// `processes` into one hold per open file description and gives each its id: "PID:FD" of the
// lowest PID (then fd) that holds it, the same in every process that shares it. `live`: the
// PIDs are gpureap's own (kcmp acts on real processes); otherwise nothing is grouped.
// `proc_dirfd`: that proc root, where a process whose main thread has exited is compared
// through a live thread (kcmp reads the fd table of the task it is given, and an exited
// leader has none); -1: each is compared by its PID alone.
OpenFileGrouping group_open_files(std::vector<core::HostProcess>& processes, bool live,
                                  int proc_dirfd = -1);

// Whether a hold is of a file that reaches one GPU (and so carries an open-file id).
bool is_gpu_file(const core::DeviceHold& hold);

}  // namespace gpureap::procfs

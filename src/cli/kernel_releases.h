#pragma once
// The kernel's word on a kill: when each signalled process's GPU files were closed for the last
// time (the moment their drivers freed what they held), as the node's daemon saw it in its
// fanotify events (daemon/holder_tracker.h). The driver's figures still decide whether the
// memory is back; this dates the release to the millisecond and names who let go last.
#include <sys/types.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "reap/outcome.h"

namespace gpureap::cli {

struct KernelRelease {
  pid_t pid = 0;  // the process that held the open file last
  std::string path;
  std::chrono::system_clock::time_point at;
};

// The releases by `pids` at or after `since`, oldest first (possibly none); empty when no
// daemon that follows the kernel's events answered, and nothing is said then. The daemon is
// asked whatever roots the kill was given (a PID that was signalled is one of this machine's
// processes, and what the kernel says of its files is true of it), but only one in this
// command's PID namespace is believed, and none with `no_daemon`.
std::optional<std::vector<KernelRelease>> kernel_releases(
    const std::vector<pid_t>& pids, std::chrono::system_clock::time_point since, bool no_daemon);

// For `kill --json`: null (no daemon with events), or [{"pid","path","at"}].
nlohmann::json kernel_releases_json(const std::optional<std::vector<KernelRelease>>& releases);
// For the human report: one line per release, timed from its process's exit (or the first
// signal); "" when there is nothing to say.
std::string kernel_releases_text(const std::optional<std::vector<KernelRelease>>& releases,
                                 const reap::Report& report);

}  // namespace gpureap::cli

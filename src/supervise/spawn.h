#pragma once
// Starts CMD: fork, then in the child its own process group (and the terminal's foreground
// when interactive), a parent-death signal (SIGTERM, should gpureap itself be killed), gpureap's
// original signal mask and dispositions, execve. An execve
// failure comes back through a close-on-exec pipe, so 126/127 are told apart from the
// job's own exit status.
#include <sys/types.h>

#include <string>
#include <variant>
#include <vector>

#include "supervise/command_path.h"
#include "supervise/signal_channel.h"

namespace gpureap::supervise {

struct SpawnRequest {
  std::string path;               // resolved with find_command
  std::vector<std::string> argv;  // argv[0] as the user wrote it
  int terminal_fd = -1;           // >= 0: make the job's group the foreground group
  pid_t supervisor = 0;           // gpureap's pid: CMD gets SIGTERM if gpureap dies first
};

struct Spawned {
  pid_t pid = 0;  // also the job's process group id
};

// CommandNotRunnable for execve failures (126/127); core::Error when gpureap itself failed
// (fork, pipe: 125).
std::variant<Spawned, CommandNotRunnable, core::Error> spawn_job(const SpawnRequest& request,
                                                                 const SignalChannel& signals);

}  // namespace gpureap::supervise

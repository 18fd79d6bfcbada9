#pragma once
// Finds CMD the way execvp(3) would, but in gpureap before it forks: the child then only
// calls execve (async-signal-safe), and "not found" (127) is told from "not executable"
// (126) with a message that names the PATH searched.
#include <optional>
#include <string>
#include <variant>

#include "core/result.h"
#include "supervise/run_report.h"

namespace gpureap::supervise {

struct CommandNotRunnable {
  EndCause cause = EndCause::NotFound;  // NotFound or NotExecutable
  core::Error error;
};

// `name` containing '/' is used as given; otherwise each PATH entry is tried in order
// (an empty entry is the current directory; unset PATH is "/bin:/usr/bin", as glibc).
std::variant<std::string, CommandNotRunnable> find_command(
    const std::string& name, const std::optional<std::string>& path_env);

}  // namespace gpureap::supervise

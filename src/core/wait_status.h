#pragma once
// How a wait status (waitpid(2), a zombie's /proc/PID/stat field 52, the proc connector's exit
// event) says a process ended, in words.
#include <string>

namespace gpureap::core {

// "SIGKILL", "status 1".
std::string wait_status_text(int wait_status);

// Killed by a signal, or exited with a nonzero status: the process failed, by its own word or
// a signal's.
bool abnormal_end(int wait_status);

}  // namespace gpureap::core

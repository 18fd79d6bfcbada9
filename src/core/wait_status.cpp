#include "core/wait_status.h"

#include <string.h>
#include <sys/wait.h>

namespace gpureap::core {

std::string wait_status_text(int wait_status) {
  if (WIFSIGNALED(wait_status)) {
    const int sig = WTERMSIG(wait_status);
    const char* abbrev = sigabbrev_np(sig);
    return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
  }
  if (WIFEXITED(wait_status)) return "status " + std::to_string(WEXITSTATUS(wait_status));
  return "wait status " + std::to_string(wait_status);
}

bool abnormal_end(int wait_status) {
  return WIFSIGNALED(wait_status) || (WIFEXITED(wait_status) && WEXITSTATUS(wait_status) != 0);
}

}  // namespace gpureap::core

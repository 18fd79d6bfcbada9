#pragma once
// Runs a check as an unprivileged process: a forked child that, when it is root, becomes nobody
// (65534) with no capabilities left, runs `check` and sends back the text it returns. A
// non-root test run is unprivileged already and runs it as it is.
#include <grp.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>

namespace gpureap::testing {

inline std::string run_unprivileged(const std::function<std::string()>& check) {
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return "pipe failed";
  pid_t child = ::fork();
  if (child == 0) {
    ::close(pipe_fds[0]);
    std::string said;
    // Leaving uid 0 for good clears the permitted and effective capabilities (without
    // SECBIT_KEEP_CAPS); the ambient set goes explicitly.
    ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    if (::geteuid() == 0 &&
        (::setgroups(0, nullptr) != 0 || ::setresgid(65534, 65534, 65534) != 0 ||
         ::setresuid(65534, 65534, 65534) != 0))
      said = "cannot become nobody";
    else
      said = check();
    ssize_t ignored = ::write(pipe_fds[1], said.data(), said.size());
    (void)ignored;
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  std::string said;
  char buf[512];
  ssize_t n;
  while ((n = ::read(pipe_fds[0], buf, sizeof buf)) > 0) said.append(buf, static_cast<size_t>(n));
  ::close(pipe_fds[0]);
  ::waitpid(child, nullptr, 0);
  return said;
}

}  // namespace gpureap::testing

#include "supervise/spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "text/escape.h"

extern char** environ;

namespace gpureap::supervise {
namespace {

std::vector<char*> c_argv(std::vector<std::string>& args) {
  std::vector<char*> out;
  out.reserve(args.size() + 1);
  for (auto& a : args) out.push_back(a.data());
  out.push_back(nullptr);
  return out;
}

// Only async-signal-safe calls between fork and execve: gpureap may have threads (the GPU
// sampling engine, a driver library's own) whose locks the child inherits held.
[[noreturn]] void run_child(const SpawnRequest& r, char* const* argv, char* const* sh_argv,
                            const SignalChannel& signals, int report_fd) {
  ::setpgid(0, 0);
  // Before execve, so the job never runs a moment in the background of its terminal.
  // SIGTTOU is still blocked here (gpureap's mask), so this cannot stop the child.
  if (r.terminal_fd >= 0) ::tcsetpgrp(r.terminal_fd, ::getpid());
  // If gpureap is killed (SIGKILL, the OOM killer) the job must not run on unsupervised. The
  // setting survives execve; the getppid check closes the race with a parent already gone.
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (r.supervisor > 0 && ::getppid() != r.supervisor) ::_exit(125);
  signals.restore_in_child();
  ::execve(r.path.c_str(), argv, environ);
  int err = errno;
  // As execvp: a file without a #! line is a shell script.
  if (err == ENOEXEC) {
    ::execve("/bin/sh", sh_argv, environ);
  }
  ssize_t ignored = ::write(report_fd, &err, sizeof err);
  (void)ignored;
  ::_exit(err == ENOENT ? 127 : 126);
}

}  // namespace

std::variant<Spawned, CommandNotRunnable, core::Error> spawn_job(const SpawnRequest& r,
                                                                 const SignalChannel& signals) {
  std::vector<std::string> args = r.argv;
  std::vector<std::string> sh_args{"sh", r.path};
  sh_args.insert(sh_args.end(), r.argv.begin() + (r.argv.empty() ? 0 : 1), r.argv.end());
  auto argv = c_argv(args);
  auto sh_argv = c_argv(sh_args);

  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0)
    return core::Error{std::string("cannot create a pipe: ") + std::strerror(errno),
                       "the system is out of file descriptors; retry"};
  pid_t pid = ::fork();
  if (pid < 0) {
    int err = errno;
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    return core::Error{std::string("cannot fork: ") + std::strerror(err),
                       "the system is out of processes or memory; retry later"};
  }
  if (pid == 0) {
    ::close(pipe_fds[0]);
    run_child(r, argv.data(), sh_argv.data(), signals, pipe_fds[1]);
  }
  ::close(pipe_fds[1]);
  // The parent sets the group too, so it exists before gpureap signals it or hands it the
  // terminal, whichever of the two processes runs first. EACCES: the child already exec'd.
  ::setpgid(pid, pid);
  int err = 0;
  ssize_t n;
  do n = ::read(pipe_fds[0], &err, sizeof err);
  while (n < 0 && errno == EINTR);
  ::close(pipe_fds[0]);
  if (n != static_cast<ssize_t>(sizeof err)) return Spawned{pid};  // EOF: execve succeeded
  ::waitpid(pid, nullptr, 0);
  std::string name = "`" + text::terminal_safe(r.argv.empty() ? r.path : r.argv[0]) + "`";
  std::string why = std::strerror(err);
  // find_command saw the file, so ENOENT here is its #! interpreter (or a loader) missing.
  if (err == ENOENT)
    return CommandNotRunnable{
        EndCause::NotExecutable,
        {"cannot run " + name + ": " + why + " (" + text::terminal_safe(r.path) + ")",
         "check the interpreter named on its #! line"}};
  return CommandNotRunnable{
      EndCause::NotExecutable,
      {"cannot run " + name + ": " + why + " (" + text::terminal_safe(r.path) + ")",
       "check that it is a program for this machine and executable"}};
}

}  // namespace gpureap::supervise

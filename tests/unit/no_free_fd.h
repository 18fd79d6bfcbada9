#pragma once
// Runs code with no file descriptor free: in a forked child whose soft limit of open files is
// its lowest free fd, so the first open, dup or dlopen fails with EMFILE. The body answers in
// text through a pipe. Skip such a test under the sanitizers (skip_sanitized.h).
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>

namespace gpureap::testing {

// Runs `body` in a forked child after `prepare`, with no fd free, and returns what the body
// answered ("" where the child failed to answer).
inline std::string with_no_free_fd(const std::function<void()>& prepare,
                                   const std::function<std::string()>& body) {
  int out[2];
  if (::pipe(out) != 0) return "";
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(out[0]);
    prepare();
    int lowest = ::open("/dev/null", O_RDONLY | O_CLOEXEC);  // the lowest free fd
    ::close(lowest);
    struct rlimit lim {};
    ::getrlimit(RLIMIT_NOFILE, &lim);
    lim.rlim_cur = static_cast<rlim_t>(lowest);
    if (::setrlimit(RLIMIT_NOFILE, &lim) != 0) ::_exit(2);
    std::string answer = body();
    if (::write(out[1], answer.data(), answer.size()) < 0) ::_exit(3);
    ::_exit(0);
  }
  ::close(out[1]);
  std::string answer;
  char buf[4096];
  for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) > 0;) answer.append(buf, n);
  ::close(out[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return answer;
}

}  // namespace gpureap::testing

#pragma once
// Runs code under a limit of open files, in a forked child that answers in text through a
// pipe: with no file descriptor free (its soft limit is its lowest free fd, so the first open,
// dup or dlopen fails with EMFILE), or under given soft and hard limits. A test with no fd
// free may have to skip under the sanitizers (skip_sanitized.h).
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>

namespace gpureap::testing {

// Runs `body` in a forked child after `prepare`, under the limit of open files `limit` gives
// (called in the child after `prepare`, from the child's limit then), and returns what the
// body answered ("" where the child failed to answer, or could not set the limit).
inline std::string in_child_with_fd_limit(const std::function<rlimit(rlimit)>& limit,
                                          const std::function<void()>& prepare,
                                          const std::function<std::string()>& body) {
  int out[2];
  if (::pipe(out) != 0) return "";
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(out[0]);
    if (prepare) prepare();
    struct rlimit lim {};
    ::getrlimit(RLIMIT_NOFILE, &lim);
    lim = limit(lim);
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

// Runs `body` in a forked child whose limit of open files is `soft`, hard `hard`.
inline std::string in_child_with_fd_limit(rlim_t soft, rlim_t hard,
                                          const std::function<std::string()>& body) {
  return in_child_with_fd_limit([&](rlimit) { return rlimit{soft, hard}; }, {}, body);
}

// Runs `body` in a forked child after `prepare`, with no fd free, and returns what the body
// answered ("" where the child failed to answer).
inline std::string with_no_free_fd(const std::function<void()>& prepare,
                                   const std::function<std::string()>& body) {
  return in_child_with_fd_limit(
      [](rlimit lim) {
        int lowest = ::open("/dev/null", O_RDONLY | O_CLOEXEC);  // the lowest free fd
        ::close(lowest);
        lim.rlim_cur = static_cast<rlim_t>(lowest);
        return lim;
      },
      prepare, body);
}

}  // namespace gpureap::testing

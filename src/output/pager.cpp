#include "output/pager.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <iostream>

namespace gpureap::output {
namespace {

bool executable_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    std::string file = (dir.empty() ? "." : dir) + "/" + name;
    struct stat st {};
    if (::stat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(file.c_str(), X_OK) == 0)
      return true;
    start = end + 1;
  }
  return false;
}

void write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the pager quit (EPIPE): what is left is not wanted
    text.remove_prefix(static_cast<size_t>(n));
  }
}

}  // namespace

std::optional<std::string> choose_pager(bool stdout_is_terminal, bool no_pager,
                                        const char* pager_env,
                                        const std::function<bool(const std::string&)>& on_path) {
  if (!stdout_is_terminal || no_pager) return std::nullopt;
  if (pager_env) {
    std::string p = pager_env;
    if (p.empty() || p == "cat") return std::nullopt;
    return p;
  }
  if (on_path && on_path("less")) return std::string(kDefaultPager);
  return std::nullopt;
}

std::optional<std::string> pager_for_stdout(bool no_pager) {
  return choose_pager(::isatty(STDOUT_FILENO) == 1, no_pager, std::getenv("PAGER"),
                      executable_on_path);
}

bool longer_than(std::string_view text, size_t rows) {
  size_t lines = 0;
  for (char c : text) lines += c == '\n';
  if (!text.empty() && text.back() != '\n') ++lines;
  return lines > rows;
}

std::optional<size_t> terminal_rows() {
  winsize ws{};
  if (::isatty(STDOUT_FILENO) && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0)
    return ws.ws_row;
  return std::nullopt;
}

void page(std::string_view text, const std::optional<std::string>& pager) {
  auto rows = terminal_rows();
  if (!pager || !rows || !longer_than(text, *rows)) {
    std::cout << text << std::flush;
    return;
  }
  std::cout << std::flush;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    std::cout << text << std::flush;
    return;
  }
  pid_t child = ::fork();
  if (child < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    std::cout << text << std::flush;
    return;
  }
  if (child == 0) {
    ::dup2(fds[0], STDIN_FILENO);
    ::execl("/bin/sh", "sh", "-c", pager->c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(fds[0]);
  struct sigaction ignore {
  }, old{};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, &old);
  write_all(fds[1], text);
  ::close(fds[1]);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  ::sigaction(SIGPIPE, &old, nullptr);
  // The shell could not run the pager: the text goes to the terminal as it is.
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127) std::cout << text << std::flush;
}

}  // namespace gpureap::output

#include "alert/exec_sender.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <optional>
#include <vector>

#include "core/duration.h"

extern char** environ;

namespace gpureap::alert {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr size_t kOutputKept = 4096;  // of stdout and of stderr each, for the log
constexpr milliseconds kTick{50};     // how often a run checks the child and cancellation
constexpr milliseconds kReapWait{2000};

struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  ~Fd() { close(); }
  void close() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

bool make_pipe(Fd& read_end, Fd& write_end) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return false;
  read_end.fd = p[0];
  write_end.fd = p[1];
  return true;
}

// In the child, between fork and exec: only async-signal-safe calls.
[[noreturn]] void exec_child(char* const* argv, char* const* envp, int in, int out, int err,
                             int report) {
  ::setpgid(0, 0);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);  // the daemon blocks SIGTERM, SIGHUP, SIGINT
  for (int sig = 1; sig < NSIG; ++sig) ::signal(sig, SIG_DFL);  // and ignores SIGPIPE
  if (::dup2(in, 0) < 0 || ::dup2(out, 1) < 0 || ::dup2(err, 2) < 0) {
    int e = errno;
    (void)!::write(report, &e, sizeof e);
    ::_exit(127);
  }
  // Nothing else of the daemon's reaches the command: every other descriptor closes on exec
  // (the report pipe already does, so it tells the parent that exec happened).
#ifdef SYS_close_range
  if (::syscall(SYS_close_range, 3u, ~0u, 4u /* CLOSE_RANGE_CLOEXEC */) != 0)
#endif
  {
    rlimit lim{};
    long max = ::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY
                   ? static_cast<long>(lim.rlim_cur)
                   : 65536;
    for (int fd = 3; fd < max; ++fd) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  }
  ::execve(argv[0], argv, envp);
  int e = errno;
  (void)!::write(report, &e, sizeof e);
  ::_exit(127);
}

void keep(std::string& into, const char* data, size_t n) {
  if (into.size() < kOutputKept) into.append(data, std::min(n, kOutputKept - into.size()));
}

// Reads what is there now; false at end of file.
bool drain(Fd& fd, std::string& into) {
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd.fd, buf, sizeof buf);
    if (n > 0) {
      keep(into, buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return true;
    fd.close();
    return false;
  }
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

class ExecSender : public Sender {
 public:
  explicit ExecSender(SinkConfig sink) : sink_(std::move(sink)) {}

  ~ExecSender() override { reap_leftovers(); }

  std::string target() const override {
    return sink_.command.empty() ? "(no command)" : sink_.command.front();
  }

  void cancel() override { canceled_ = true; }

  Attempt send(const Delivery& d) override {
    reap_leftovers();
    if (sink_.command.empty()) return {false, "the sink has no command", ""};
    if (canceled_) return {false, "canceled: the daemon is stopping", ""};

    std::vector<std::string> env_text;
    for (char** e = environ; e && *e; ++e)
      if (std::strncmp(*e, "GPUREAP_ALERT_", 14) != 0 && std::strncmp(*e, "GPUREAP_SINK=", 13) != 0)
        env_text.emplace_back(*e);
    env_text.push_back("GPUREAP_ALERT_STATUS=" + d.status);
    env_text.push_back("GPUREAP_ALERT_NAME=" + d.alertname);
    env_text.push_back("GPUREAP_SINK=" + sink_.name);
    std::vector<char*> envp, argv;
    for (auto& s : env_text) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<std::string> args = sink_.command;
    for (auto& s : args) argv.push_back(s.data());
    argv.push_back(nullptr);

    Fd in_r, in_w, out_r, out_w, err_r, err_w, rep_r, rep_w;
    if (!make_pipe(in_r, in_w) || !make_pipe(out_r, out_w) || !make_pipe(err_r, err_w) ||
        !make_pipe(rep_r, rep_w))
      return {false, std::string("cannot create pipes: ") + std::strerror(errno), ""};

    // A command that exits without reading its input makes our write fail with EPIPE; the
    // signal that comes with it must not end the daemon (or a test) on this thread.
    sigset_t pipe_set, old_mask;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    ::pthread_sigmask(SIG_BLOCK, &pipe_set, &old_mask);
    Attempt result =
        run(d, argv.data(), envp.data(), in_r, in_w, out_r, out_w, err_r, err_w, rep_r, rep_w);
    timespec zero{};
    while (::sigtimedwait(&pipe_set, nullptr, &zero) == SIGPIPE) {
    }
    ::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
    return result;
  }

 private:
  Attempt run(const Delivery& d, char* const* argv, char* const* envp, Fd& in_r, Fd& in_w,
              Fd& out_r, Fd& out_w, Fd& err_r, Fd& err_w, Fd& rep_r, Fd& rep_w) {
    const std::string program = sink_.command.front();
    pid_t pid = ::fork();
    if (pid < 0) return {false, "cannot start " + program + ": fork: " + std::strerror(errno), ""};
    if (pid == 0) exec_child(argv, envp, in_r.fd, out_w.fd, err_w.fd, rep_w.fd);
    in_r.close();
    out_w.close();
    err_w.close();
    rep_w.close();

    int exec_errno = 0;
    ssize_t n;
    do {
      n = ::read(rep_r.fd, &exec_errno, sizeof exec_errno);
    } while (n < 0 && errno == EINTR);
    if (n == static_cast<ssize_t>(sizeof exec_errno)) {
      reap(pid, false);
      return {false,
              "cannot run " + program + ": " + std::strerror(exec_errno) +
                  (exec_errno == ENOENT   ? "; check the path in the sink's command"
                   : exec_errno == EACCES ? "; make it executable (chmod +x) for the daemon's user"
                                          : ""),
              ""};
    }

    for (Fd* f : {&in_w, &out_r, &err_r})
      ::fcntl(f->fd, F_SETFL, ::fcntl(f->fd, F_GETFL) | O_NONBLOCK);
    std::string out, err;
    size_t written = 0;
    bool unread_input = false;
    const auto deadline = Clock::now() + sink_.timeout;
    std::optional<int> status;
    while (!status) {
      if (written == d.body.size()) in_w.close();  // end of input
      pollfd fds[3] = {{in_w.fd, POLLOUT, 0}, {out_r.fd, POLLIN, 0}, {err_r.fd, POLLIN, 0}};
      auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
      if (left.count() <= 0 || canceled_) break;
      ::poll(fds, 3, static_cast<int>(std::min(left, kTick).count()));
      if (in_w.fd >= 0 && (fds[0].revents & (POLLOUT | POLLERR | POLLHUP))) {
        ssize_t w = ::write(in_w.fd, d.body.data() + written, d.body.size() - written);
        if (w > 0) written += static_cast<size_t>(w);
        if (w < 0 && errno != EAGAIN && errno != EINTR) {
          unread_input = errno == EPIPE;
          in_w.close();
          written = d.body.size();
        }
      }
      if (out_r.fd >= 0 && fds[1].revents) drain(out_r, out);
      if (err_r.fd >= 0 && fds[2].revents) drain(err_r, err);
      int st = 0;
      if (::waitpid(pid, &st, WNOHANG) == pid) status = st;
    }
    if (!status) {
      bool canceled = canceled_;
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
      reap(pid, true);
      Attempt a{false, "", trimmed(err.empty() ? out : err)};
      a.error = canceled
                    ? program + " was killed: the daemon is stopping"
                    : program + " did not finish within " + core::format_duration(sink_.timeout) +
                          " and was killed" +
                          (written < d.body.size() ? " (it had not read all of its input)" : "") +
                          ": make it exit once it has read the alert from stdin, or raise the "
                          "sink's timeout";
      return a;
    }
    if (out_r.fd >= 0) drain(out_r, out);
    if (err_r.fd >= 0) drain(err_r, err);
    std::string said = trimmed(err.empty() ? out : err);
    if (WIFEXITED(*status) && WEXITSTATUS(*status) == 0) return {true, "", trimmed(out + err)};
    std::string error =
        WIFEXITED(*status) ? program + " exited with status " + std::to_string(WEXITSTATUS(*status))
                           : program + " was killed by signal " + std::to_string(WTERMSIG(*status));
    if (unread_input) error += " without reading its input";
    if (!said.empty()) error += "; it said: " + said;
    return {false, error, said};
  }

  // Waits a bounded time; a child that cannot be reaped yet (stuck in the kernel) is retried
  // before the next run instead of blocking this one.
  void reap(pid_t pid, bool killed) {
    const auto until = Clock::now() + (killed ? kReapWait : sink_.timeout);
    for (;;) {
      pid_t r = ::waitpid(pid, nullptr, WNOHANG);
      if (r == pid || (r < 0 && errno == ECHILD)) return;
      if (Clock::now() >= until) break;
      ::usleep(10000);
    }
    if (!killed) ::kill(-pid, SIGKILL);
    leftovers_.push_back(pid);
  }

  void reap_leftovers() {
    std::erase_if(leftovers_, [](pid_t pid) {
      pid_t r = ::waitpid(pid, nullptr, WNOHANG);
      return r == pid || (r < 0 && errno == ECHILD);
    });
  }

  SinkConfig sink_;
  std::atomic<bool> canceled_{false};
  std::vector<pid_t> leftovers_;
};

}  // namespace

std::unique_ptr<Sender> make_exec_sender(const SinkConfig& sink) {
  return std::make_unique<ExecSender>(sink);
}

}  // namespace gpureap::alert

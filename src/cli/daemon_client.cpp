#include "cli/daemon_client.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <iostream>

#include "base/deadline_io.h"
#include "base/phase_timer.h"
#include "collect/own_pid_space.h"
#include "core/duration.h"
#include "daemon/local_socket.h"
#include "text/escape.h"

namespace gpureap::cli {
namespace {

using Clock = base::DeadlineClock;
using base::send_all;
using base::wait_for;

// A ps document of a very large node is a few MiB; this only bounds a server gone wrong.
constexpr size_t kMaxAnswerBytes = size_t{256} << 20;

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

bool connect_within(int fd, const std::string& path, std::chrono::milliseconds within) {
  auto a = daemon::local_address(path);
  if (!a) return false;
  // A Unix socket's connect() waits only while the server's backlog is full, bounded by the
  // send timeout.
  timeval tv{static_cast<time_t>(within.count() / 1000),
             static_cast<suseconds_t>((within.count() % 1000) * 1000)};
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  return ::connect(fd, reinterpret_cast<const sockaddr*>(&*a), sizeof *a) == 0;
}

// Everything until the server closes; empty when it did not within the deadline.
std::optional<std::string> receive_all(int fd, Clock::time_point deadline) {
  std::string text;
  char chunk[65536];
  for (;;) {
    ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n > 0) {
      if (text.size() + static_cast<size_t>(n) > kMaxAnswerBytes) return std::nullopt;
      text.append(chunk, static_cast<size_t>(n));
    } else if (n == 0) {
      return text;
    } else if (errno == EINTR) {
      continue;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (!wait_for(fd, POLLIN, deadline)) return std::nullopt;
    } else {
      return std::nullopt;
    }
  }
}

// The daemon's answer as text, or empty when there is none in time from a peer it may trust.
std::optional<std::string> exchange(const std::string& path, const daemon::Request& request,
                                    std::chrono::milliseconds within) {
  const auto deadline = Clock::now() + within;
  std::optional<base::Phase> phase(std::in_place, "daemon connect and request");
  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0 || !connect_within(fd.get(), path, within) ||
      // A socket anyone could have made (a test's, $GPUREAP_DAEMON_SOCKET) must be served by
      // root or by this user before its text reaches the terminal.
      !daemon::peer_is_root_or_self(fd.get()))
    return std::nullopt;
  int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags | O_NONBLOCK) != 0) return std::nullopt;
  if (!send_all(fd.get(), daemon::request_line(request), deadline)) return std::nullopt;
  phase.emplace("daemon answer received");
  return receive_all(fd.get(), deadline);
}

// The daemon's evidence as it sent it. A daemon of another gpureap version (on either side) is
// said once, so that a forgotten restart after an upgrade is seen.
std::optional<daemon::EvidenceAnswer> fetch_evidence(const std::string& path,
                                                     std::chrono::milliseconds settle,
                                                     std::chrono::milliseconds within) {
  auto text = exchange(path, daemon::EvidenceRequest::current(settle), within);
  if (!text) return std::nullopt;
  auto answer = daemon::parse_evidence_answer(*text);
  if (answer) return std::move(*answer);
  if (daemon::is_version_refusal(answer.error()))
    std::cerr << "gpureap: the daemon on " << text::terminal_safe(path)
              << " runs another gpureap version (" << text::terminal_safe(answer.error().message)
              << "); this command scans on its own: restart the daemon after an upgrade\n";
  return std::nullopt;
}

}  // namespace

std::optional<std::string> foreign_pids(const core::ProcView& daemons) {
  // The daemon answers only commands with no --proc-root (daemon_socket): theirs is /proc.
  return core::pid_space_mismatch(core::pid_space_of(daemons), collect::own_pid_space("/proc"));
}

std::optional<daemon::Answer> ask_daemon(const std::string& path, const daemon::Request& request,
                                         std::chrono::milliseconds within) {
  auto text = exchange(path, request, within);
  if (!text) return std::nullopt;
  auto answer = daemon::parse_answer(*text);
  if (!answer) return std::nullopt;
  return std::move(*answer);
}

std::optional<daemon::EvidenceAnswer> ask_daemon_evidence(const std::string& path,
                                                          std::chrono::milliseconds settle,
                                                          std::chrono::milliseconds within) {
  auto answer = fetch_evidence(path, settle, within);
  if (!answer || !answer->evidence.last) return answer;
  if (auto why = foreign_pids(answer->evidence.last->proc)) {
    std::cerr << "gpureap: the daemon on " << text::terminal_safe(path)
              << " reads other processes than this command's (" << *why
              << "): its PIDs would name other processes here; this command scans on its own\n";
    return std::nullopt;
  }
  return answer;
}

std::optional<std::string> daemon_socket(const GlobalOptions& g, bool no_daemon) {
  if (no_daemon || g.roots_given) return std::nullopt;
  auto timeout = core::parse_duration(g.driver_timeout);
  if (!timeout || timeout->count() <= 0) return std::nullopt;
  std::string path = daemon::default_local_socket();
  if (path.empty()) return std::nullopt;
  return path;
}

std::optional<core::ListedSightings> ask_daemon_sightings(const GlobalOptions& g, bool no_daemon) {
  // Sightings speak of this kernel's PIDs alone: other device files, libraries or logs than the
  // daemon's change nothing in them (adopt_sightings takes those of the PIDs listed here).
  if (no_daemon || g.proc_root_given) return std::nullopt;
  const std::string path = daemon::default_local_socket();
  if (path.empty()) return std::nullopt;
  // Sightings of other processes are refused by adopt_daemon_sightings, which says what that
  // means for a command that signals.
  auto answer = fetch_evidence(path, std::chrono::milliseconds(0), kDaemonAnswerWithin);
  if (!answer || !answer->evidence.last) return std::nullopt;
  return core::sightings_of(answer->evidence.last->proc);
}

void adopt_daemon_sightings(collect::Collector& collector,
                            std::optional<core::ListedSightings> sightings) {
  if (!sightings) return;
  if (auto why = collector.adopt_sightings(std::move(*sightings)))
    std::cerr << "gpureap: the daemon's sightings of the driver's lists are not used: " << *why
              << "; this command decides on its own scan: a process that took a listed number "
                 "may pass for the listed one\n";
}

int print_command_output(const std::string& out, const std::vector<std::string>& err,
                         int exit_code) {
  for (const auto& line : err) std::cerr << line << "\n";
  std::cout << out << std::flush;
  return exit_code;
}

}  // namespace gpureap::cli

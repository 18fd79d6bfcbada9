#include "daemon/sd_notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace gpureap::daemon {

Notifier Notifier::from_environment() {
  const char* socket = std::getenv("NOTIFY_SOCKET");
  if (!socket || !*socket) return {};
  std::optional<std::chrono::microseconds> watchdog;
  const char* usec = std::getenv("WATCHDOG_USEC");
  const char* pid = std::getenv("WATCHDOG_PID");
  // WATCHDOG_PID names the process systemd watches; a child that inherited it is not.
  bool ours = !pid || !*pid || std::strtoll(pid, nullptr, 10) == ::getpid();
  if (usec && *usec && ours) {
    char* end = nullptr;
    long long v = std::strtoll(usec, &end, 10);
    if (end && *end == '\0' && v > 0) watchdog = std::chrono::microseconds(v);
  }
  return Notifier(socket, watchdog);
}

Notifier::Notifier(std::string socket_path, std::optional<std::chrono::microseconds> watchdog)
    : path_(std::move(socket_path)), watchdog_(watchdog) {}

Notifier::~Notifier() {
  if (fd_ >= 0) ::close(fd_);
}

Notifier::Notifier(Notifier&& other) noexcept
    : path_(std::move(other.path_)),
      watchdog_(other.watchdog_),
      fd_(std::exchange(other.fd_, -1)) {}

Notifier& Notifier::operator=(Notifier&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    watchdog_ = other.watchdog_;
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

bool Notifier::send(std::string_view message) {
  if (path_.empty()) return true;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path_.size() >= sizeof addr.sun_path || (path_[0] != '/' && path_[0] != '@')) return false;
  std::memcpy(addr.sun_path, path_.data(), path_.size());
  socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path_.size());
  if (path_[0] == '@')
    addr.sun_path[0] = '\0';  // abstract namespace: no trailing NUL
  else
    ++len;
  if (fd_ < 0) fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return false;
  ssize_t n = ::sendto(fd_, message.data(), message.size(), MSG_NOSIGNAL,
                       reinterpret_cast<sockaddr*>(&addr), len);
  return n == static_cast<ssize_t>(message.size());
}

bool Notifier::status(std::string_view text) {
  std::string line = "STATUS=";
  // STATUS is one line: a newline would start another assignment.
  for (char c : text) line += (c == '\n' || c == '\r') ? ' ' : c;
  return send(line);
}

}  // namespace gpureap::daemon

#pragma once
// systemd's notification protocol, spoken directly (no libsystemd): datagrams of
// "KEY=VALUE" lines to the AF_UNIX socket named by $NOTIFY_SOCKET ('@' starts an abstract
// name). READY=1, RELOADING=1, STOPPING=1, STATUS=..., WATCHDOG=1.
#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace gpureap::daemon {

class Notifier {
 public:
  // From $NOTIFY_SOCKET and $WATCHDOG_USEC / $WATCHDOG_PID. Without $NOTIFY_SOCKET (not run
  // by systemd) every send is a no-op.
  static Notifier from_environment();
  // For tests: a given socket path and watchdog period.
  Notifier(std::string socket_path, std::optional<std::chrono::microseconds> watchdog);
  Notifier() = default;
  ~Notifier();
  Notifier(Notifier&& other) noexcept;
  Notifier& operator=(Notifier&& other) noexcept;
  Notifier(const Notifier&) = delete;
  Notifier& operator=(const Notifier&) = delete;

  bool enabled() const { return !path_.empty(); }
  // systemd's WatchdogSec for this process; the daemon pings at half of it.
  std::optional<std::chrono::microseconds> watchdog() const { return watchdog_; }

  // False when the datagram could not be sent (logged by the caller at most once).
  bool send(std::string_view message);
  bool ready() { return send("READY=1"); }
  bool reloading() { return send("RELOADING=1"); }
  bool stopping() { return send("STOPPING=1"); }
  bool status(std::string_view text);
  bool ping_watchdog() { return send("WATCHDOG=1"); }

 private:
  std::string path_;
  std::optional<std::chrono::microseconds> watchdog_;
  int fd_ = -1;
};

}  // namespace gpureap::daemon

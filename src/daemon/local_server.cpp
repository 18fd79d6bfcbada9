#include "daemon/local_server.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <optional>
#include <thread>

#include "base/log.h"
#include "base/phase_timer.h"
#include "daemon/local_answer.h"
#include "daemon/local_protocol.h"
#include "daemon/local_socket.h"

namespace gpureap::daemon {
namespace {

using Clock = std::chrono::steady_clock;

enum class Wait { Ready, TimedOut, Stopping };

}  // namespace

struct LocalServer::Impl {
  BoundSocket socket;
  const SamplePublisher& samples;
  std::shared_ptr<const HolderTracker> tracker;
  std::shared_ptr<Incidents> incidents;
  LocalServerLimits limits;
  EvidenceBodies bodies;  // only the server's thread answers
  int wake_fd = -1;
  std::atomic<bool> stopping{false};
  std::thread thread;

  Impl(BoundSocket s, const SamplePublisher& p, std::shared_ptr<const HolderTracker> t,
       LocalServerLimits l)
      : socket(std::move(s)), samples(p), tracker(std::move(t)), limits(l) {}
  ~Impl() {
    if (wake_fd >= 0) ::close(wake_fd);
    close_local_socket(socket);
  }

  // Until `fd` is ready for `events`, the deadline passes, or stop() is called.
  Wait wait(int fd, short events, Clock::time_point deadline) {
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) return Wait::TimedOut;
      pollfd fds[2] = {{fd, events, 0}, {wake_fd, POLLIN, 0}};
      int n = ::poll(fds, 2, static_cast<int>(std::min<long long>(left.count(), 1000)));
      if (stopping.load()) return Wait::Stopping;
      if (n < 0 && errno != EINTR) return Wait::TimedOut;
      if (n > 0 && fds[0].revents) return Wait::Ready;
    }
  }

  // The request line, its newline included; what came before EOF when the client closed
  // without one. Empty with `why` set when none came in time or it is too long.
  std::string read_request(int fd, std::string& why) {
    const auto deadline = Clock::now() + limits.read_deadline;
    std::string buf;
    char chunk[1024];
    for (;;) {
      if (auto nl = buf.find('\n'); nl != std::string::npos) return buf.substr(0, nl + 1);
      if (buf.size() > kMaxRequestBytes) {
        why = "bad request: longer than " + std::to_string(kMaxRequestBytes) + " bytes";
        return {};
      }
      ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
      if (n > 0) {
        buf.append(chunk, static_cast<size_t>(n));
        continue;
      }
      if (n == 0) return buf.empty() ? "\n" : buf;  // "\n": parsed as the empty request
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        why = std::string("cannot read the request: ") + std::strerror(errno);
        return {};
      }
      if (wait(fd, POLLIN, deadline) != Wait::Ready) {
        why = "no request line within " + std::to_string(limits.read_deadline.count()) + " ms";
        return {};
      }
    }
  }

  void write_all(int fd, std::string_view text, Clock::duration within) {
    const auto deadline = Clock::now() + within;
    while (!text.empty()) {
      ssize_t n = ::send(fd, text.data(), text.size(), MSG_NOSIGNAL);
      if (n > 0) {
        text.remove_prefix(static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) &&
          wait(fd, POLLOUT, deadline) == Wait::Ready)
        continue;
      return;  // the client went away or does not read: its loss alone
    }
  }

  void serve(int fd) {
    // The socket's mode already keeps others out; its peer's credentials check it again in
    // case the mode was loosened.
    uid_t uid = 0;
    if (!peer_is_root_or_self(fd, &uid)) {
      base::log_debug("local socket: refused a client of uid " + std::to_string(uid));
      write_all(fd, error_text("uid " + std::to_string(uid) + " may not ask this daemon"),
                limits.write_deadline);
      return;
    }
    std::string why;
    std::string request = read_request(fd, why);
    std::optional<base::Phase> phase(std::in_place, "local socket answer built");
    std::string answer = request.empty()
                             ? error_text(why)
                             : local_answer(request, samples.latest(), tracker.get(), Clock::now(),
                                            &samples.history(), incidents.get(),
                                            Peer{uid, peer_shares_pid_namespace(fd)}, &bodies);
    phase.emplace("local socket answer sent");
    write_all(fd, answer, limits.write_deadline);
  }

  void run() {
    while (!stopping.load()) {
      pollfd fds[2] = {{socket.fd, POLLIN, 0}, {wake_fd, POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0 && errno != EINTR) {
        base::log_error(std::string("local socket: poll failed: ") + std::strerror(errno) +
                        "; gpureap's commands scan on their own from now on");
        return;
      }
      if (stopping.load()) return;
      if (!(fds[0].revents & POLLIN)) continue;
      int fd = ::accept4(socket.fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) {
        // Out of descriptors: back off briefly instead of spinning on a readable listener.
        if (errno == EMFILE || errno == ENFILE || errno == ENOMEM || errno == ENOBUFS)
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
        continue;
      }
      serve(fd);
      ::close(fd);
    }
  }
};

LocalServer::LocalServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

LocalServer::~LocalServer() {
  stop();
}

core::Result<std::unique_ptr<LocalServer>> LocalServer::start(
    const std::string& path, const SamplePublisher& samples,
    std::shared_ptr<const HolderTracker> tracker, LocalServerLimits limits,
    std::shared_ptr<Incidents> incidents) {
  auto bound = bind_local_socket(path);
  if (!bound) return bound.error();
  auto impl = std::make_unique<Impl>(std::move(*bound), samples, std::move(tracker), limits);
  impl->incidents = std::move(incidents);
  impl->wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (impl->wake_fd < 0)
    return core::Error{"local socket " + path + ": cannot make an eventfd: " + std::strerror(errno),
                       ""};
  impl->thread = std::thread([raw = impl.get()] { raw->run(); });
  return std::unique_ptr<LocalServer>(new LocalServer(std::move(impl)));
}

void LocalServer::stop() {
  if (!impl_) return;
  impl_->stopping.store(true);
  uint64_t one = 1;
  (void)!::write(impl_->wake_fd, &one, sizeof one);
  if (impl_->thread.joinable()) impl_->thread.join();
  impl_.reset();
}

const std::string& LocalServer::path() const {
  static const std::string none;
  return impl_ ? impl_->socket.path : none;
}

}  // namespace gpureap::daemon

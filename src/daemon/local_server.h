#pragma once
// The daemon's local socket server: `gpureap ps`, `doctor` or `top` connects, sends one request
// line, gets its answer on the latest sample (daemon/local_answer.h), and the daemon closes. One
// small thread serves one connection at a time with deadlines on every read and write, so a slow
// or silent client delays only the next command (by at most those deadlines), never sampling
// nor HTTP.
#include <chrono>
#include <memory>
#include <string>

#include "core/result.h"
#include "daemon/holder_tracker.h"
#include "daemon/incident.h"
#include "daemon/sample_publisher.h"

namespace gpureap::daemon {

struct LocalServerLimits {
  std::chrono::milliseconds read_deadline{2000};   // for the whole request line
  std::chrono::milliseconds write_deadline{5000};  // for the whole answer
};

class LocalServer {
 public:
  // Binds `path` (local_socket.h) and starts serving the latest of `samples` and the releases
  // `tracker` keeps (null: none), recording the commands' announcements in `incidents` (null:
  // refused); an error says why it cannot.
  static core::Result<std::unique_ptr<LocalServer>> start(
      const std::string& path, const SamplePublisher& samples,
      std::shared_ptr<const HolderTracker> tracker, LocalServerLimits limits = {},
      std::shared_ptr<Incidents> incidents = nullptr);
  ~LocalServer();  // stop()
  LocalServer(const LocalServer&) = delete;
  LocalServer& operator=(const LocalServer&) = delete;

  // Ends the connection in progress, joins the thread, removes the socket file.
  void stop();
  const std::string& path() const;

  struct Impl;

 private:
  explicit LocalServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpureap::daemon

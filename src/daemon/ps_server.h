#pragma once
// The daemon's local socket server: `gpureap ps` connects, sends one request line, gets the
// latest sample rendered as it would have printed it, and the daemon closes. One small thread
// serves one connection at a time with deadlines on every read and write, so a slow or silent
// client delays only the next ps (by at most those deadlines), never sampling nor HTTP.
#include <chrono>
#include <memory>
#include <string>

#include "core/result.h"
#include "daemon/sample_publisher.h"

namespace gpureap::daemon {

struct PsServerLimits {
  std::chrono::milliseconds read_deadline{2000};   // for the whole request line
  std::chrono::milliseconds write_deadline{5000};  // for the whole answer
};

class PsServer {
 public:
  // Binds `path` (local_socket.h) and starts serving; an error says why it cannot.
  static core::Result<std::unique_ptr<PsServer>> start(const std::string& path,
                                                       const SamplePublisher& samples,
                                                       PsServerLimits limits = {});
  ~PsServer();  // stop()
  PsServer(const PsServer&) = delete;
  PsServer& operator=(const PsServer&) = delete;

  // Ends the connection in progress, joins the thread, removes the socket file.
  void stop();
  const std::string& path() const;

  struct Impl;

 private:
  explicit PsServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpureap::daemon

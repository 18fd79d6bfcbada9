#pragma once
// The daemon's HTTP endpoints, read-only (GET and HEAD; nothing here can signal a process):
//   /               a landing page linking the others
//   /metrics        Prometheus text format 0.0.4
//   /healthz        200 while the sampling engine runs (never needs the token)
//   /api/v1/snapshot, /api/v1/findings, /api/v1/history?gpu=N&since=...
// Thin: it routes, checks the token and parses query parameters; the content comes from a
// ContentSource that serves prepared samples and never waits for the GPU driver.
#include <memory>
#include <optional>
#include <string>

#include "core/result.h"
#include "export/listen_address.h"
#include "history/series.h"

namespace gpureap::exporter {

struct Reply {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

struct HistoryRequest {
  std::optional<unsigned> gpu;
  history::TimePoint since;
};

// Called from the server's worker threads, concurrently: implementations must be thread-safe.
class ContentSource {
 public:
  virtual ~ContentSource() = default;
  virtual Reply metrics() = 0;
  virtual Reply health() = 0;
  virtual Reply snapshot() = 0;
  virtual Reply findings() = 0;
  virtual Reply history(const HistoryRequest& request) = 0;
  virtual Reply policies() = 0;
  virtual Reply releases() = 0;
  // /api/v1/status: how the daemon works here (e.g. how it follows GPU device files).
  virtual Reply status() { return {404, "text/plain; charset=utf-8", "no status here\n"}; }
  // How far back /api/v1/history goes when the request has no `since`.
  virtual std::chrono::milliseconds default_history_span() const = 0;
};

struct HttpOptions {
  std::optional<std::string>
      token;             // required as "Authorization: Bearer <token>" except on /healthz
  unsigned threads = 4;  // workers that build responses; sockets never hold one
};

class HttpServer {
 public:
  // Binds before returning, so "address in use" is an error here and not a log line later.
  static core::Result<std::unique_ptr<HttpServer>> start(const ListenAddress& address,
                                                         ContentSource& content,
                                                         HttpOptions options);
  ~HttpServer();  // stops and joins
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // The address actually bound (the port the kernel chose when asked for port 0).
  const ListenAddress& address() const;
  void set_token(std::optional<std::string> token);
  void stop();

  struct Impl;

 private:
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpureap::exporter

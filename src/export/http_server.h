#pragma once
// The daemon's HTTP transport, read-only (GET and HEAD; nothing here can signal a process):
//   /               a landing page listing the routes, generated from them
//   and the routes the daemon registers (daemon/http_content: /metrics, /healthz, /api/v1/...).
// Thin: it routes, checks the token and renders responses; the content comes from each route's
// handler, which serves prepared samples and never waits for the GPU driver.
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "export/http_request.h"
#include "export/listen_address.h"
#include "history/series.h"

namespace gpureap::exporter {

struct Reply {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  // When set, the body instead of `body`: built once and shared by every client sent it, so
  // many clients reading one large page slowly hold one copy of it.
  std::shared_ptr<const std::string> shared_body;
};

struct HistoryRequest {
  std::optional<unsigned> gpu;
  history::TimePoint since;
  std::optional<history::TimePoint> until;  // the incident's end; empty: now
};

// The query of /api/v1/history (`gpu`, `since`, `until`); errors say what to write instead.
// Without `since`, the last `default_span`.
core::Result<HistoryRequest> history_request(const HttpRequest& request,
                                             std::chrono::milliseconds default_span);

// One page of the server: its path, how the landing page lists it, and what builds it.
struct Route {
  std::string path;  // "/metrics"
  // The landing page's line: a link to path + example_query, written as path + usage_query
  // (plain text), then ": " and the description (HTML).
  std::string description_html;
  std::string example_query;  // "?since=10m"
  std::string usage_query;    // "?gpu=N&since=10m"
  bool open = false;          // answers without the bearer token (/healthz: probes carry none)
  // Served even when the response budget (HttpOptions) is spent: the small pages, built once
  // per sample, that monitoring must always get (/metrics, /healthz).
  bool essential = false;
  // Called from the server's worker threads, concurrently: it must be thread-safe.
  std::function<Reply(const HttpRequest& request)> handle;
};

// The bytes of responses the server holds for its clients at once, each body counted once
// however many clients are sent it. Beyond it a request for a page that is not essential is
// answered 503 with Retry-After, so slow or many clients cannot make the daemon grow.
inline constexpr size_t kDefaultResponseBudget = size_t{2} << 20;

struct HttpOptions {
  std::optional<std::string>
      token;             // required as "Authorization: Bearer <token>" except on open routes
  unsigned threads = 4;  // workers that build responses; sockets never hold one
  size_t response_budget = kDefaultResponseBudget;
};

class HttpServer {
 public:
  // Binds before returning, so "address in use" is an error here and not a log line later.
  // The routes are served in their order; "/" is the landing page that lists them.
  static core::Result<std::unique_ptr<HttpServer>> start(const ListenAddress& address,
                                                         std::vector<Route> routes,
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

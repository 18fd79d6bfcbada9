#include "export/http_server.h"

#include <httplib.h>
#include <pthread.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <mutex>
#include <thread>

#include "export/bearer_auth.h"
#include "export/history_json.h"

namespace gpureap::exporter {
namespace {

constexpr const char* kLandingPage = R"(<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>gpureap</title></head>
<body>
<h1>gpureap</h1>
<p>Which processes hold GPU memory on this node, and why.</p>
<ul>
<li><a href="metrics">/metrics</a>: Prometheus metrics</li>
<li><a href="healthz">/healthz</a>: liveness</li>
<li><a href="api/v1/snapshot">/api/v1/snapshot</a>: every GPU and holder (the <code>gpureap ps --json</code> document)</li>
<li><a href="api/v1/findings">/api/v1/findings</a>: what is wrong and how to fix it (the <code>gpureap doctor --json</code> document)</li>
<li><a href="api/v1/history?since=10m">/api/v1/history?gpu=N&amp;since=10m</a>: memory and utilisation over time</li>
<li><a href="api/v1/policies">/api/v1/policies</a>: what each cleanup policy matches and where it stands</li>
</ul>
<p>Read-only: no endpoint can signal a process.</p>
</body></html>
)";

void send(httplib::Response& res, const Reply& reply) {
  res.status = reply.status;
  res.set_content(reply.body, reply.content_type.c_str());
}

Reply bad_request(const core::Error& e) {
  return {400, "text/plain; charset=utf-8", e.text() + "\n"};
}

// The query of /api/v1/history; errors say what to write instead.
core::Result<HistoryRequest> history_request(const httplib::Request& req, ContentSource& content) {
  HistoryRequest r;
  auto now = std::chrono::system_clock::now();
  r.since = now - std::chrono::duration_cast<TimePoint::duration>(content.default_history_span());
  if (req.has_param("gpu")) {
    std::string text = req.get_param_value("gpu");
    unsigned gpu = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), gpu);
    if (text.empty() || ec != std::errc() || ptr != text.data() + text.size())
      return core::Error{"gpu must be a GPU index (0, 1, ...)",
                         "e.g. /api/v1/history?gpu=0&since=10m"};
    r.gpu = gpu;
  }
  if (req.has_param("since")) {
    auto since = parse_since(req.get_param_value("since"), now);
    if (!since) return since.error();
    r.since = *since;
  }
  return r;
}

}  // namespace

struct HttpServer::Impl {
  httplib::Server server;
  ListenAddress address;
  ContentSource* content = nullptr;
  std::mutex token_mutex;
  std::optional<std::string> token;
  std::thread thread;
  std::atomic<bool> finished{false};
  socket_t listen_fd = -1;

  bool authorized(const httplib::Request& req) {
    std::lock_guard lock(token_mutex);
    return !token || bearer_matches(req.get_header_value("Authorization"), *token);
  }

  void routes() {
    server.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (req.method != "GET" && req.method != "HEAD") {
        res.set_header("Allow", "GET, HEAD");
        send(res, {405, "text/plain; charset=utf-8",
                   "gpureap's HTTP interface is read-only: use GET\n"});
        return httplib::Server::HandlerResponse::Handled;
      }
      if (req.path != "/healthz" && !authorized(req)) {
        res.set_header("WWW-Authenticate", "Bearer realm=\"gpureap\"");
        send(res,
             {401, "text/plain; charset=utf-8",
              "a bearer token is required: send the content of the daemon's auth_token_file as "
              "\"Authorization: Bearer TOKEN\"\n"});
        return httplib::Server::HandlerResponse::Handled;
      }
      res.set_header("Cache-Control", "no-store");
      return httplib::Server::HandlerResponse::Unhandled;
    });
    server.Get("/", [](const httplib::Request&, httplib::Response& res) {
      send(res, {200, "text/html; charset=utf-8", kLandingPage});
    });
    server.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      send(res, content->metrics());
    });
    server.Get("/healthz", [this](const httplib::Request&, httplib::Response& res) {
      send(res, content->health());
    });
    server.Get("/api/v1/snapshot", [this](const httplib::Request&, httplib::Response& res) {
      send(res, content->snapshot());
    });
    server.Get("/api/v1/findings", [this](const httplib::Request&, httplib::Response& res) {
      send(res, content->findings());
    });
    server.Get("/api/v1/policies", [this](const httplib::Request&, httplib::Response& res) {
      send(res, content->policies());
    });
    server.Get("/api/v1/history", [this](const httplib::Request& req, httplib::Response& res) {
      auto r = history_request(req, *content);
      send(res, r ? content->history(*r) : bad_request(r.error()));
    });
    server.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
      if (res.status == 404)
        res.set_content("no such page: " + req.path + " (see / for the list)\n",
                        "text/plain; charset=utf-8");
    });
    server.set_exception_handler(
        [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
          std::string what = "unknown error";
          try {
            std::rethrow_exception(ep);
          } catch (const std::exception& e) {
            what = e.what();
          } catch (...) {
          }
          send(res, {500, "text/plain; charset=utf-8",
                     "internal error: " + what + "; please report this as a gpureap bug\n"});
        });
  }
};

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() {
  stop();
}

core::Result<std::unique_ptr<HttpServer>> HttpServer::start(const ListenAddress& address,
                                                            ContentSource& content,
                                                            HttpOptions options) {
  auto impl = std::make_unique<Impl>();
  impl->content = &content;
  impl->token = std::move(options.token);
  impl->address = address;
  const unsigned threads = std::max(1u, options.threads);
  impl->server.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  // One request per connection, and short read timeouts: each connection holds a worker
  // thread while it is open, so an idle keep-alive connection (a scraper between scrapes) or
  // a slow client would starve the others. A scrape every few seconds pays one TCP handshake.
  impl->server.set_keep_alive_max_count(1);
  impl->server.set_keep_alive_timeout(1);
  impl->server.set_read_timeout(2, 0);
  impl->server.set_write_timeout(2, 0);
  // Only SO_REUSEADDR: httplib's default adds SO_REUSEPORT, which would let a second daemon
  // bind the same port and silently take half of the scrapes.
  Impl* raw = impl.get();
  impl->server.set_socket_options([raw](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    raw->listen_fd = sock;
  });
  impl->routes();
  errno = 0;
  bool bound = false;
  if (address.port == 0) {
    int port = impl->server.bind_to_any_port(address.host);
    bound = port > 0;
    if (bound) impl->address.port = static_cast<uint16_t>(port);
  } else {
    bound = impl->server.bind_to_port(address.host, address.port);
  }
  if (!bound) {
    std::string why = errno ? std::strerror(errno) : "the address cannot be used";
    return core::Error{
        "cannot listen on " + address.text() + ": " + why,
        "choose another address with --listen or `listen` in the config, or stop what uses it "
        "(ss -ltnp 'sport = :" +
            std::to_string(address.port) + "')"};
  }
  // httplib listens with a backlog of 5: a burst of scrapers (many Prometheus replicas, a
  // dashboard refresh) would see dropped SYNs and one-second retries. listen() again raises it.
  if (impl->listen_fd >= 0) ::listen(impl->listen_fd, SOMAXCONN);
  impl->thread = std::thread([raw] {
    ::pthread_setname_np(::pthread_self(), "gpureap-http");  // its worker pool inherits it
    raw->server.listen_after_bind();
    raw->finished = true;
  });
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

const ListenAddress& HttpServer::address() const {
  return impl_->address;
}

void HttpServer::set_token(std::optional<std::string> token) {
  std::lock_guard lock(impl_->token_mutex);
  impl_->token = std::move(token);
}

void HttpServer::stop() {
  if (!impl_ || !impl_->thread.joinable()) return;
  // httplib's stop() does nothing before its loop runs, and must run once: wait for the loop.
  while (!impl_->server.is_running() && !impl_->finished)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (!impl_->finished) impl_->server.stop();
  // httplib waits for every connection's worker, and a client in the middle of a request holds
  // one until the read timeout: a stop must not wait that long (systemd, SIGTERM, a reload).
  // Past the bound, its threads are left to end on their own with the memory they use.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(400);
  while (!impl_->finished && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  if (impl_->finished) {
    impl_->thread.join();
    return;
  }
  impl_->thread.detach();
  (void)impl_.release();
}

}  // namespace gpureap::exporter

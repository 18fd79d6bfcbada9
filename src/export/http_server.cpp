#include "export/http_server.h"

#include <fcntl.h>
#include <netdb.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "export/bearer_auth.h"
#include "export/history_since.h"
#include "export/http_request.h"
#include "text/escape.h"

namespace gpureap::exporter {
namespace {

using Clock = std::chrono::steady_clock;

// Connections open at once (fewer when the file descriptor limit is lower). At the bound a new
// connection evicts the one that has waited longest for its request, so a flood of idle
// sockets costs bounded memory and descriptors and never locks a scraper out.
constexpr size_t kMaxConnections = 4096;
// A client has this long to send its request head, and to take the response.
constexpr auto kHeadTimeout = std::chrono::seconds(5);
constexpr auto kWriteTimeout = std::chrono::seconds(10);

// The landing page: a link to each route, in the order the daemon registered them.
std::string landing_page(const std::vector<Route>& routes) {
  std::string page = R"(<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>gpureap</title></head>
<body>
<h1>gpureap</h1>
<p>Which processes hold GPU memory on this node, and why.</p>
<ul>
)";
  for (const auto& r : routes)
    page += "<li><a href=\"" + text::markup_safe(r.path.substr(1) + r.example_query) + "\">" +
            text::markup_safe(r.path + r.usage_query) + "</a>: " + r.description_html + "</li>\n";
  page += R"(</ul>
<p>Read-only: no endpoint can signal a process.</p>
</body></html>
)";
  return page;
}

HttpResponse reply(Reply r) {
  return {r.status, std::move(r.content_type), std::move(r.body), {}, std::move(r.shared_body)};
}

HttpResponse text(int status, std::string body) {
  return {status, "text/plain; charset=utf-8", std::move(body), {}};
}

// What a connection sends: the head, then the body, which may be shared with other connections
// (null for none).
struct Outgoing {
  std::string head;
  std::shared_ptr<const std::string> body;

  size_t size() const { return head.size() + (body ? body->size() : 0); }
  // The bytes from `offset` to the end of the part it falls in.
  std::string_view from(size_t offset) const {
    if (offset < head.size()) return std::string_view(head).substr(offset);
    return std::string_view(*body).substr(offset - head.size());
  }
};

struct Connection {
  enum class State { Reading, Processing, Writing } state = State::Reading;
  std::string in;
  Outgoing out;
  size_t sent = 0;
  Clock::time_point deadline;
};

struct Job {
  int fd;
  HttpRequest request;
};

struct Done {
  int fd;
  Outgoing out;
  bool essential;  // sent even beyond the response budget: an essential page, or no page
};

// The response as it goes out; a body of its own becomes the shared one without a copy.
Outgoing outgoing(HttpResponse r, bool head_only) {
  Outgoing out{render_head(r), nullptr};
  if (!head_only)
    out.body = r.shared_body ? std::move(r.shared_body)
                             : std::make_shared<const std::string>(std::move(r.body));
  return out;
}

}  // namespace

core::Result<HistoryRequest> history_request(const HttpRequest& req,
                                             std::chrono::milliseconds default_span) {
  HistoryRequest r;
  auto now = std::chrono::system_clock::now();
  r.since = now - std::chrono::duration_cast<history::TimePoint::duration>(default_span);
  if (auto text = req.param("gpu")) {
    unsigned gpu = 0;
    auto [ptr, ec] = std::from_chars(text->data(), text->data() + text->size(), gpu);
    if (text->empty() || ec != std::errc() || ptr != text->data() + text->size())
      return core::Error{"gpu must be a GPU index (0, 1, ...)",
                         "e.g. /api/v1/history?gpu=0&since=10m"};
    r.gpu = gpu;
  }
  if (auto since_text = req.param("since")) {
    auto since = parse_since(*since_text, now);
    if (!since) return since.error();
    r.since = *since;
  }
  if (auto until_text = req.param("until")) {
    auto until = parse_since(*until_text, now);
    if (!until) return until.error();
    if (*until <= r.since)
      return core::Error{"until must be after since: the window would be empty",
                         "e.g. /api/v1/history?since=2h&until=1h"};
    r.until = *until;
  }
  return r;
}

// One event loop thread owns every socket: it accepts, reads request heads and writes
// responses without blocking, so an idle or slow client costs a few bytes of state and never a
// thread. Complete requests go to a few workers that only build the response with the route's
// handler (from prepared samples), so /healthz answers however many clients sit idle.
struct HttpServer::Impl {
  ListenAddress address;
  std::vector<Route> routes;
  std::string landing;  // the page at "/", from the routes
  std::mutex token_mutex;
  std::optional<std::string> token;

  int listen_fd = -1;
  int epoll_fd = -1;
  int wake_fd = -1;
  std::atomic<bool> stopping{false};
  std::thread loop;
  std::vector<std::thread> workers;

  std::mutex jobs_mutex;
  std::condition_variable jobs_cv;
  std::deque<Job> jobs;
  std::mutex done_mutex;
  std::deque<Done> done;

  std::map<int, Connection> connections;  // the loop thread's only
  size_t max_connections = kMaxConnections;
  // The bodies being sent, each once with the connections sending it, and their bytes: the
  // loop thread's only.
  std::unordered_map<const std::string*, size_t> bodies_sent;
  size_t response_bytes = 0;
  size_t response_budget = kDefaultResponseBudget;

  bool over_budget() const { return response_bytes >= response_budget; }

  // The answer instead of a page while the budget is spent: short, and says what to do.
  Outgoing over_budget_answer() const {
    auto r = text(503, "gpureap is already sending " + mib(response_bytes) +
                           " of responses to other clients (its limit is " + mib(response_budget) +
                           ", to stay small on this node); retry in a second, or ask with "
                           "fewer clients at once\n");
    r.headers.push_back({"Retry-After", "1"});
    r.headers.push_back({"Cache-Control", "no-store"});
    return outgoing(std::move(r), false);
  }

  static std::string mib(size_t bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
    return buf;
  }

  void hold_body(const Outgoing& out) {
    if (out.body && bodies_sent[out.body.get()]++ == 0) response_bytes += out.body->size();
  }

  void release_body(const Outgoing& out) {
    if (!out.body) return;
    auto it = bodies_sent.find(out.body.get());
    if (it == bodies_sent.end() || --it->second > 0) return;
    response_bytes -= out.body->size();
    bodies_sent.erase(it);
  }

  ~Impl() {
    for (int fd : {listen_fd, epoll_fd, wake_fd})
      if (fd >= 0) ::close(fd);
  }

  // Whether the request carries the token, and whether it may be served (no token is set, or
  // it carries it): one reading, so a token replaced meanwhile cannot split the two.
  std::pair<bool, bool> check_token(const HttpRequest& req) {
    std::lock_guard lock(token_mutex);
    const bool sent = token && bearer_matches(req.header("authorization"), *token);
    return {sent, !token || sent};
  }

  const Route* route_of(const HttpRequest& req) const {
    for (const auto& candidate : routes)
      if (candidate.path == req.path) return &candidate;
    return nullptr;
  }

  // Sent even beyond the response budget: an essential page, and the short answers that are
  // not pages (errors, the landing page's few KiB).
  bool essential(const HttpRequest& req) const {
    const Route* route = route_of(req);
    return !route || route->essential;
  }

  HttpResponse respond(HttpRequest req) {
    const auto [sent, authorized] = check_token(req);
    req.sent_token = sent;
    if (req.method != "GET" && req.method != "HEAD") {
      auto r = text(405, "gpureap's HTTP interface is read-only: use GET\n");
      r.headers.push_back({"Allow", "GET, HEAD"});
      return r;
    }
    const Route* route = route_of(req);
    if (!(route && route->open) && !authorized) {
      auto r =
          text(401,
               "a bearer token is required: send the content of the daemon's auth_token_file as "
               "\"Authorization: Bearer TOKEN\"\n");
      r.headers.push_back({"WWW-Authenticate", "Bearer realm=\"gpureap\""});
      return r;
    }
    HttpResponse r;
    if (req.path == "/")
      r = {200, "text/html; charset=utf-8", landing, {}};
    else if (route)
      r = reply(route->handle(req));
    else
      r = text(404, "no such page: " + req.path + " (see / for the list)\n");
    r.headers.push_back({"Cache-Control", "no-store"});
    return r;
  }

  void work() {
    for (;;) {
      Job job;
      {
        std::unique_lock lock(jobs_mutex);
        jobs_cv.wait(lock, [&] { return stopping || !jobs.empty(); });
        if (stopping) return;
        job = std::move(jobs.front());
        jobs.pop_front();
      }
      Outgoing out;
      bool always = essential(job.request);
      try {
        auto r = respond(job.request);
        always = always || r.status != 200;  // an error or a refusal says why, whatever it costs
        out = outgoing(std::move(r), job.request.method == "HEAD");
      } catch (const std::exception& e) {
        always = true;
        out = outgoing(text(500, std::string("internal error: ") + e.what() +
                                     "; please report this as a gpureap bug\n"),
                       false);
      }
      {
        std::lock_guard lock(done_mutex);
        done.push_back({job.fd, std::move(out), always});
      }
      wake();
    }
  }

  void wake() {
    uint64_t one = 1;
    (void)!::write(wake_fd, &one, sizeof one);
  }

  void close_connection(int fd) {
    ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, fd, nullptr);
    ::close(fd);
    auto it = connections.find(fd);
    if (it == connections.end()) return;
    if (it->second.state == Connection::State::Writing) release_body(it->second.out);
    connections.erase(it);
  }

  void start_writing(int fd, Connection& c, Outgoing out) {
    c.state = Connection::State::Writing;
    c.out = std::move(out);
    hold_body(c.out);
    c.sent = 0;
    c.in.clear();
    c.in.shrink_to_fit();
    c.deadline = Clock::now() + kWriteTimeout;
    epoll_event ev{};
    ev.events = EPOLLOUT;
    ev.data.fd = fd;
    ::epoll_ctl(epoll_fd, EPOLL_CTL_MOD, fd, &ev);
    write_some(fd, c);
  }

  void write_some(int fd, Connection& c) {
    while (c.sent < c.out.size()) {
      const std::string_view rest = c.out.from(c.sent);
      ssize_t n = ::send(fd, rest.data(), rest.size(), MSG_NOSIGNAL);
      if (n > 0) {
        c.sent += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      return close_connection(fd);
    }
    ::shutdown(fd, SHUT_WR);
    close_connection(fd);
  }

  void accept_all() {
    for (;;) {
      if (connections.size() >= max_connections && !evict_oldest_idle()) return;
      int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;
      epoll_event ev{};
      ev.events = EPOLLIN | EPOLLRDHUP;
      ev.data.fd = fd;
      if (::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        ::close(fd);
        continue;
      }
      connections[fd].deadline = Clock::now() + kHeadTimeout;
    }
  }

  bool evict_oldest_idle() {
    auto oldest = connections.end();
    for (auto it = connections.begin(); it != connections.end(); ++it)
      if (it->second.state == Connection::State::Reading &&
          (oldest == connections.end() || it->second.deadline < oldest->second.deadline))
        oldest = it;
    if (oldest == connections.end()) return false;
    close_connection(oldest->first);
    return true;
  }

  void read_some(int fd, Connection& c) {
    char buf[4096];
    for (;;) {
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n > 0) {
        c.in.append(buf, static_cast<size_t>(n));
        if (c.in.size() > kMaxRequestHead + sizeof buf) break;
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      return close_connection(fd);  // closed by the client, or an error
    }
    auto head = parse_request_head(c.in);
    switch (head.status) {
      case HeadStatus::Incomplete:
        return;
      case HeadStatus::TooLarge:
        return start_writing(fd, c, outgoing(text(431, "the request head is too large\n"), false));
      case HeadStatus::Bad:
        return start_writing(fd, c, outgoing(text(400, head.error + "\n"), false));
      case HeadStatus::Complete:
        break;
    }
    // Beyond the budget the page is refused, once the client is one it would be served to (a
    // client without the token is told 401, as always).
    if (over_budget() && !essential(head.request) && check_token(head.request).second)
      return start_writing(fd, c, over_budget_answer());
    c.state = Connection::State::Processing;
    epoll_event ev{};
    ev.data.fd = fd;
    ::epoll_ctl(epoll_fd, EPOLL_CTL_MOD, fd, &ev);  // no events until the response is ready
    {
      std::lock_guard lock(jobs_mutex);
      jobs.push_back({fd, std::move(head.request)});
    }
    jobs_cv.notify_one();
  }

  void collect_done() {
    uint64_t n;
    (void)!::read(wake_fd, &n, sizeof n);
    std::deque<Done> ready;
    {
      std::lock_guard lock(done_mutex);
      ready.swap(done);
    }
    for (auto& d : ready) {
      auto it = connections.find(d.fd);
      if (it == connections.end()) continue;
      // Requests queued together pass the check on arrival; a body that would add to what is
      // already sent beyond the budget is dropped here, before it stays for a slow client.
      const bool sent_already = d.out.body && bodies_sent.count(d.out.body.get());
      if (over_budget() && !d.essential && !sent_already) d.out = over_budget_answer();
      start_writing(d.fd, it->second, std::move(d.out));
    }
  }

  void expire() {
    auto now = Clock::now();
    std::vector<int> late;
    for (const auto& [fd, c] : connections)
      if (c.state != Connection::State::Processing && now > c.deadline) late.push_back(fd);
    for (int fd : late) close_connection(fd);
  }

  void run() {
    ::pthread_setname_np(::pthread_self(), "gpureap-http");
    std::vector<epoll_event> events(256);
    auto next_sweep = Clock::now();
    while (!stopping) {
      int n = ::epoll_wait(epoll_fd, events.data(), static_cast<int>(events.size()), 200);
      for (int i = 0; i < n && !stopping; ++i) {
        int fd = events[static_cast<size_t>(i)].data.fd;
        if (fd == listen_fd)
          accept_all();
        else if (fd == wake_fd)
          collect_done();
        else if (auto it = connections.find(fd); it != connections.end()) {
          auto& c = it->second;
          if (c.state == Connection::State::Reading)
            read_some(fd, c);
          else if (c.state == Connection::State::Writing)
            write_some(fd, c);
        }
      }
      if (Clock::now() >= next_sweep) {
        expire();
        next_sweep = Clock::now() + std::chrono::milliseconds(200);
      }
    }
    for (auto& [fd, c] : connections) ::close(fd);
    connections.clear();
    bodies_sent.clear();
    response_bytes = 0;
  }
};

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() {
  stop();
}

namespace {

core::Error listen_error(const ListenAddress& address, const std::string& why) {
  return core::Error{
      "cannot listen on " + address.text() + ": " + why,
      "choose another address with --listen or `listen` in the config, or stop what uses it "
      "(ss -ltnp 'sport = :" +
          std::to_string(address.port) + "')"};
}

}  // namespace

core::Result<std::unique_ptr<HttpServer>> HttpServer::start(const ListenAddress& address,
                                                            std::vector<Route> routes,
                                                            HttpOptions options) {
  auto impl = std::make_unique<Impl>();
  impl->landing = landing_page(routes);
  impl->routes = std::move(routes);
  impl->token = std::move(options.token);
  impl->response_budget = options.response_budget;
  impl->address = address;

  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  std::string port = std::to_string(address.port);
  if (int rc = ::getaddrinfo(address.host.empty() ? nullptr : address.host.c_str(), port.c_str(),
                             &hints, &found);
      rc != 0)
    return listen_error(address, ::gai_strerror(rc));
  std::string why = "the address cannot be used";
  for (addrinfo* a = found; a && impl->listen_fd < 0; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    // Only SO_REUSEADDR: SO_REUSEPORT would let a second daemon bind the same port and
    // silently take half of the scrapes.
    int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, SOMAXCONN) == 0) {
      impl->listen_fd = fd;
      break;
    }
    why = std::strerror(errno);
    ::close(fd);
  }
  ::freeaddrinfo(found);
  if (impl->listen_fd < 0) return listen_error(address, why);
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  if (::getsockname(impl->listen_fd, reinterpret_cast<sockaddr*>(&bound), &len) == 0) {
    if (bound.ss_family == AF_INET)
      impl->address.port = ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    if (bound.ss_family == AF_INET6)
      impl->address.port = ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port);
  }

  impl->epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
  impl->wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (impl->epoll_fd < 0 || impl->wake_fd < 0) return listen_error(address, std::strerror(errno));
  for (int fd : {impl->listen_fd, impl->wake_fd}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    ::epoll_ctl(impl->epoll_fd, EPOLL_CTL_ADD, fd, &ev);
  }
  // Descriptors for the connections, with room to spare for the rest of the daemon.
  rlimit nofile{};
  if (::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY)
    impl->max_connections =
        std::clamp<size_t>(nofile.rlim_cur > 256 ? nofile.rlim_cur - 256 : 16, 16, kMaxConnections);
  Impl* raw = impl.get();
  const unsigned threads = std::max(1u, options.threads);
  for (unsigned i = 0; i < threads; ++i) raw->workers.emplace_back([raw] { raw->work(); });
  raw->loop = std::thread([raw] { raw->run(); });
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
  if (!impl_ || !impl_->loop.joinable()) return;
  {
    std::lock_guard lock(impl_->jobs_mutex);
    impl_->stopping = true;
  }
  impl_->jobs_cv.notify_all();
  impl_->wake();
  impl_->loop.join();
  for (auto& w : impl_->workers) w.join();
  impl_->workers.clear();
}

}  // namespace gpureap::exporter

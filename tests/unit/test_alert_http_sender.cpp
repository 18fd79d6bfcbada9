#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "alert/http_sender.h"
#include "alert/sink_worker.h"

namespace gpureap::alert {
namespace {

using namespace std::chrono_literals;

// A receiver on 127.0.0.1 that answers with `status` and records what it got; with `hang`, it
// does not answer until the test is done with it.
class Receiver {
 public:
  explicit Receiver(int status, bool hang = false) {
    server_.Post(".*", [this, status, hang](const httplib::Request& req, httplib::Response& res) {
      std::unique_lock lock(m_);
      requests_.push_back(req);
      if (hang) released_.wait_for(lock, 20s, [&] { return done_; });
      res.status = status;
      res.set_content(status == 200 ? "ok" : "boom", "text/plain");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(1ms);
  }
  ~Receiver() {
    {
      std::lock_guard lock(m_);
      done_ = true;
      released_.notify_all();
    }
    server_.stop();
    thread_.join();
  }
  int port() const { return port_; }
  std::vector<httplib::Request> requests() {
    std::lock_guard lock(m_);
    return requests_;
  }

 private:
  // httplib's server ignores SIGPIPE for the whole process; later tests check dispositions.
  struct KeepSigpipe {
    struct sigaction old {};
    KeepSigpipe() { ::sigaction(SIGPIPE, nullptr, &old); }
    ~KeepSigpipe() { ::sigaction(SIGPIPE, &old, nullptr); }
  } keep_sigpipe_;  // before server_: restored after it is gone
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex m_;
  std::condition_variable released_;
  bool done_ = false;
  std::vector<httplib::Request> requests_;
};

// A port on which nothing listens.
int closed_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

SinkConfig hook(std::string url, std::chrono::milliseconds timeout = 5s) {
  SinkConfig s;
  s.name = "hook";
  s.url = std::move(url);
  s.timeout = timeout;
  return s;
}

Delivery http_delivery() {
  return {R"({"version":"4"})", "GpuMemoryHigh", "firing", 1};
}

TEST(AlertHttpUrl, SplitsWhatTheClientNeeds) {
  auto t = parse_http_url("https://hooks.slack.com/services/T0/B0/secret");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->scheme, "https");
  EXPECT_EQ(t->authority, "hooks.slack.com");
  EXPECT_EQ(t->host, "hooks.slack.com");
  EXPECT_EQ(t->path, "/services/T0/B0/secret");
  t = parse_http_url("http://am:secret@[::1]:9093?x=1#frag");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->authority, "[::1]:9093");
  EXPECT_EQ(t->host, "::1");
  EXPECT_EQ(t->path, "/?x=1");
  EXPECT_EQ(t->user, "am");
  EXPECT_EQ(t->password, "secret");
  EXPECT_FALSE(parse_http_url("ftp://x/"));
  EXPECT_FALSE(parse_http_url("http:///path"));
}

TEST(AlertHttpSender, PostsTheJsonAndA2xxIsSuccess) {
  Receiver r(200);
  auto s = make_http_sender(
      hook("http://user:pw@127.0.0.1:" + std::to_string(r.port()) + "/hook?team=gpu"));
  EXPECT_EQ(s->target(), "POST http://127.0.0.1:" + std::to_string(r.port()));
  Attempt a = s->send(http_delivery());
  EXPECT_TRUE(a.ok) << a.error;
  auto got = r.requests();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].path, "/hook");
  EXPECT_EQ(got[0].get_param_value("team"), "gpu");
  EXPECT_EQ(got[0].body, R"({"version":"4"})");
  EXPECT_EQ(got[0].get_header_value("Content-Type"), "application/json");
  EXPECT_EQ(got[0].get_header_value("User-Agent").rfind("gpureap/", 0), 0u);
  EXPECT_EQ(got[0].get_header_value("Authorization"), "Basic dXNlcjpwdw==");
}

TEST(AlertHttpSender, AnErrorStatusIsAFailureWithWhatTheReceiverSaid) {
  Receiver r(500);
  auto s = make_http_sender(hook("http://127.0.0.1:" + std::to_string(r.port()) + "/"));
  Attempt a = s->send(http_delivery());
  EXPECT_FALSE(a.ok);
  EXPECT_EQ(a.error, "the receiver answered HTTP 500; it said: boom");
}

TEST(AlertHttpSender, NobodyListening) {
  int port = closed_port();
  auto s = make_http_sender(hook("http://127.0.0.1:" + std::to_string(port) + "/"));
  Attempt a = s->send(http_delivery());
  EXPECT_FALSE(a.ok);
  EXPECT_EQ(a.error, "cannot connect to 127.0.0.1:" + std::to_string(port) +
                         " (refused or unreachable); check that the receiver runs and this node "
                         "can reach it");
}

TEST(AlertHttpSender, AReceiverThatHangsTimesOut) {
  Receiver r(200, true);
  auto s = make_http_sender(hook("http://127.0.0.1:" + std::to_string(r.port()) + "/", 200ms));
  Attempt a = s->send(http_delivery());
  EXPECT_FALSE(a.ok);
  EXPECT_EQ(
      a.error.rfind("no answer from 127.0.0.1:" + std::to_string(r.port()) + " within 200ms", 0),
      0u)
      << a.error;
}

TEST(AlertHttpSender, ANameThatDoesNotResolve) {
  // .invalid never resolves (RFC 2606).
  auto s = make_http_sender(hook("http://no-such-receiver.invalid/"));
  Attempt a = s->send(http_delivery());
  EXPECT_FALSE(a.ok);
  EXPECT_EQ(a.error.rfind("cannot resolve no-such-receiver.invalid: ", 0), 0u) << a.error;
}

TEST(AlertHttpSender, HttpsToAPlainHttpReceiverFailsTheHandshake) {
  Receiver r(200);
  auto s = make_http_sender(hook("https://127.0.0.1:" + std::to_string(r.port()) + "/"));
  Attempt a = s->send(http_delivery());
  EXPECT_FALSE(a.ok);
  EXPECT_NE(a.error.find("TLS"), std::string::npos) << a.error;
  EXPECT_TRUE(r.requests().empty());
}

// A receiver on 127.0.0.1 written by hand: reads the request's head, then `serve` writes what
// it likes on the connection. Counts the bytes it managed to send.
class RawReceiver {
 public:
  explicit RawReceiver(std::function<void(RawReceiver&, int)> serve) : serve_(std::move(serve)) {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(listener_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(listener_, 4);
    socklen_t len = sizeof a;
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] {
      int fd = ::accept(listener_, nullptr, nullptr);
      if (fd < 0) return;
      std::string head;
      char c;
      while (head.find("\r\n\r\n") == std::string::npos && ::recv(fd, &c, 1, 0) == 1) head += c;
      serve_(*this, fd);
      ::close(fd);
      served_ = true;
    });
  }
  ~RawReceiver() {
    stop_ = true;
    ::shutdown(listener_, SHUT_RDWR);
    thread_.join();
    ::close(listener_);
  }
  int port() const { return port_; }
  bool stopping() const { return stop_; }
  // Sends all of `text`; false once the client is gone.
  bool send(int fd, std::string_view text) {
    while (!text.empty()) {
      ssize_t n = ::send(fd, text.data(), text.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      sent_ += static_cast<uint64_t>(n);
      text.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }
  uint64_t sent() const { return sent_; }
  // `serve` has returned: all it sent was taken, or the client hung up.
  bool served() const { return served_; }

 private:
  std::function<void(RawReceiver&, int)> serve_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> sent_{0};
  std::atomic<bool> served_{false};
  std::thread thread_;
};

// `status` and a 1 GiB body sent as fast as the client takes it.
void huge_answer(RawReceiver& r, int fd, int status) {
  if (!r.send(fd, "HTTP/1.1 " + std::to_string(status) +
                      " X\r\nContent-Length: 1073741824\r\nConnection: close\r\n\r\n"))
    return;
  const std::string chunk(1 << 16, 'x');
  for (uint64_t n = 0; n < (uint64_t{1} << 30) && !r.stopping(); n += chunk.size())
    if (!r.send(fd, chunk)) return;
}

// A 1 GiB answer: the status decides, at most a few KiB of the body are read, and the
// receiver can push no more than the sockets' buffers hold before the sender hangs up (a
// sender that read on to its deadline would have taken far more).
TEST(AlertHttpSender, AHugeAnswerIsReadOnlyAFewKibibytesOf) {
  for (int status : {200, 500}) {
    RawReceiver r([status](RawReceiver& self, int fd) { huge_answer(self, fd, status); });
    auto s = make_http_sender(hook("http://127.0.0.1:" + std::to_string(r.port()) + "/", 60s));
    Attempt a = s->send(http_delivery());
    EXPECT_EQ(a.ok, status == 200) << a.error;
    EXPECT_LE(a.output.size(), 300u);
    if (status == 500) {
      EXPECT_EQ(a.error.rfind("the receiver answered HTTP 500; it said: xxx", 0), 0u) << a.error;
      EXPECT_LT(a.error.size(), 400u);
    }
    // The sender hung up (the receiver's next send fails) once the kernel's loopback buffers
    // had taken what they could: what it sent by then, not the gigabyte.
    const auto until = std::chrono::steady_clock::now() + 60s;
    while (!r.served() && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(1ms);
    EXPECT_TRUE(r.served()) << "the sender kept the connection open";
    EXPECT_LT(r.sent(), uint64_t{64} << 20);
  }
}

// A receiver that trickles its answer (a byte every 50 ms, each within any read timeout) or
// its headers for a minute: the attempt ends at its deadline, long before, as a failure,
// whichever it trickles.
TEST(AlertHttpSender, ATricklingReceiverFailsAtTheDeadline) {
  for (bool in_headers : {false, true}) {
    std::atomic<bool> trickled_all{false};
    RawReceiver r([in_headers, &trickled_all](RawReceiver& self, int fd) {
      if (!self.send(fd, in_headers ? "HTTP/1.1 200 OK\r\n"
                                    : "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n"))
        return;
      for (int i = 0; i < 1200 && !self.stopping(); ++i) {
        std::this_thread::sleep_for(50ms);
        if (!self.send(fd, in_headers ? "X-Slow: 1\r\n" : "x")) return;
      }
      trickled_all = !self.stopping();
    });
    auto s = make_http_sender(hook("http://127.0.0.1:" + std::to_string(r.port()) + "/", 500ms));
    Attempt a = s->send(http_delivery());
    EXPECT_FALSE(trickled_all) << "the deadline did not hold";
    EXPECT_FALSE(a.ok);
    EXPECT_NE(a.error.find("within 500ms"), std::string::npos) << a.error;
  }
}

// Through the sink's worker: the trickled attempt is counted, as a failure.
TEST(AlertHttpSender, ATrickledAttemptCountsAsAFailure) {
  RawReceiver r([](RawReceiver& self, int fd) {
    if (!self.send(fd, "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n")) return;
    for (int i = 0; i < 400 && !self.stopping(); ++i) {
      std::this_thread::sleep_for(50ms);
      if (!self.send(fd, "x")) return;
    }
  });
  auto sink = hook("http://127.0.0.1:" + std::to_string(r.port()) + "/", 300ms);
  sink.retries = 0;
  auto counters = std::make_shared<SinkCounters>();
  SinkWorker worker(sink, make_http_sender(sink), counters);
  worker.push(http_delivery());
  auto until = std::chrono::steady_clock::now() + 60s;
  while (counters->failure == 0 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(10ms);
  EXPECT_EQ(counters->failure.load(), 1u);
  EXPECT_EQ(counters->success.load(), 0u);
  worker.stop(1s);
}

}  // namespace
}  // namespace gpureap::alert

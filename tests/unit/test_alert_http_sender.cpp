#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "alert/http_sender.h"

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

Delivery delivery() {
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
  Attempt a = s->send(delivery());
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
  Attempt a = s->send(delivery());
  EXPECT_FALSE(a.ok);
  EXPECT_EQ(a.error, "the receiver answered HTTP 500; it said: boom");
}

TEST(AlertHttpSender, NobodyListening) {
  int port = closed_port();
  auto s = make_http_sender(hook("http://127.0.0.1:" + std::to_string(port) + "/"));
  Attempt a = s->send(delivery());
  EXPECT_FALSE(a.ok);
  EXPECT_EQ(a.error, "cannot connect to 127.0.0.1:" + std::to_string(port) +
                         " (refused or unreachable); check that the receiver runs and this node "
                         "can reach it");
}

TEST(AlertHttpSender, AReceiverThatHangsTimesOut) {
  Receiver r(200, true);
  auto s = make_http_sender(hook("http://127.0.0.1:" + std::to_string(r.port()) + "/", 200ms));
  Attempt a = s->send(delivery());
  EXPECT_FALSE(a.ok);
  EXPECT_EQ(
      a.error.rfind("no answer from 127.0.0.1:" + std::to_string(r.port()) + " within 200ms", 0),
      0u)
      << a.error;
}

TEST(AlertHttpSender, ANameThatDoesNotResolve) {
  // .invalid never resolves (RFC 2606).
  auto s = make_http_sender(hook("http://no-such-receiver.invalid/"));
  Attempt a = s->send(delivery());
  EXPECT_FALSE(a.ok);
  EXPECT_EQ(a.error.rfind("cannot resolve no-such-receiver.invalid: ", 0), 0u) << a.error;
}

TEST(AlertHttpSender, HttpsToAPlainHttpReceiverFailsTheHandshake) {
  Receiver r(200);
  auto s = make_http_sender(hook("https://127.0.0.1:" + std::to_string(r.port()) + "/"));
  Attempt a = s->send(delivery());
  EXPECT_FALSE(a.ok);
  EXPECT_NE(a.error.find("TLS"), std::string::npos) << a.error;
  EXPECT_TRUE(r.requests().empty());
}

}  // namespace
}  // namespace gpureap::alert

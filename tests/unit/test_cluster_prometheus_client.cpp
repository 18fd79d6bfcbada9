// The Prometheus client against servers that misbehave on a loopback port: one that trickles,
// one that announces more than the bound, one that sends more than it, one that redirects; and
// what it sends: the query, the credentials.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "cluster/prometheus_client.h"

namespace gpureap::cluster {
namespace {

using namespace std::chrono_literals;

// One connection on 127.0.0.1, served by `serve(fd, request)` on a thread.
class OneShotServer {
 public:
  explicit OneShotServer(std::function<void(int, const std::string&)> serve) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(listen_fd_, 4);
    socklen_t len = sizeof a;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this, serve] {
      int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) return;
      std::string request;
      char buf[4096];
      while (request.find("\r\n\r\n") == std::string::npos) {
        ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        request.append(buf, static_cast<size_t>(n));
      }
      {
        std::lock_guard lock(mutex_);
        request_ = request;
      }
      serve(fd, request);
      ::close(fd);
    });
  }
  ~OneShotServer() {
    ::shutdown(listen_fd_, SHUT_RDWR);
    ::close(listen_fd_);
    thread_.join();
  }
  PrometheusTarget target() const {
    return {"http", "127.0.0.1:" + std::to_string(port_), "127.0.0.1", "/prefix"};
  }
  std::string request() {
    std::lock_guard lock(mutex_);
    return request_;
  }

 private:
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::mutex mutex_;
  std::string request_;
  std::thread thread_;
};

void send_text(int fd, const std::string& s) {
  (void)::send(fd, s.data(), s.size(), MSG_NOSIGNAL);
}

TEST(PrometheusClient, ATricklingServerCostsTheTimeoutNotForever) {
  std::atomic<bool> stop{false}, trickled_all{false};
  OneShotServer server([&](int fd, const std::string&) {
    send_text(fd, "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n{");
    // A byte every 50 ms for a minute, each within any read timeout: far past the deadline.
    int i = 0;
    for (; i < 1200 && !stop; ++i) {
      send_text(fd, " ");
      std::this_thread::sleep_for(50ms);
    }
    trickled_all = i == 1200;
  });
  PrometheusClient client(server.target(), {}, 1s);
  auto answer = client.query("up", 1);
  EXPECT_FALSE(trickled_all) << "the client waited for the whole trickle";
  stop = true;
  ASSERT_FALSE(answer);
  EXPECT_NE(answer.error().message.find("did not answer in full within 1s"), std::string::npos)
      << answer.error().message;
}

TEST(PrometheusClient, AnAnswerPastTheBoundIsRefusedUnread) {
  OneShotServer announced([](int fd, const std::string&) {
    send_text(fd, "HTTP/1.1 200 OK\r\nContent-Length: 999999999999\r\n\r\n{}");
  });
  PrometheusClient small(announced.target(), {}, 5s, 1024);
  auto a = small.query("up", 1);
  ASSERT_FALSE(a);
  EXPECT_NE(a.error().message.find("refused unread"), std::string::npos) << a.error().message;

  OneShotServer streamed([](int fd, const std::string&) {
    send_text(fd, "HTTP/1.0 200 OK\r\n\r\n");
    std::string chunk(4096, ' ');
    for (int i = 0; i < 64; ++i) send_text(fd, chunk);
  });
  PrometheusClient small2(streamed.target(), {}, 5s, 16 * 1024);
  auto b = small2.query("up", 1);
  ASSERT_FALSE(b);
  EXPECT_NE(b.error().message.find("refused unread"), std::string::npos) << b.error().message;
}

TEST(PrometheusClient, RedirectsAreNotFollowedAndCredentialsGoInTheHeader) {
  OneShotServer server([](int fd, const std::string&) {
    send_text(fd, "HTTP/1.1 302 Found\r\nLocation: http://elsewhere/\r\nContent-Length: 0\r\n\r\n");
  });
  PrometheusClient client(server.target(), {std::string("s3cret"), std::nullopt}, 5s);
  auto a = client.query("up{job=\"gpureap\"}", 1800000000);
  ASSERT_FALSE(a);
  EXPECT_NE(a.error().message.find("redirect"), std::string::npos) << a.error().message;
  const auto request = server.request();
  EXPECT_EQ(
      request.rfind(
          "GET /prefix/api/v1/query?query=up%7Bjob%3D%22gpureap%22%7D&time=1800000000.000 ", 0),
      0u)
      << request;
  EXPECT_NE(request.find("Authorization: Bearer s3cret\r\n"), std::string::npos) << request;
}

TEST(PrometheusClient, PrometheusErrorsInJsonAreHandedToTheParser) {
  OneShotServer server([](int fd, const std::string&) {
    std::string body = R"({"status":"error","errorType":"bad_data","error":"parse error"})";
    send_text(fd, "HTTP/1.1 400 Bad Request\r\nContent-Length: " + std::to_string(body.size()) +
                      "\r\n\r\n" + body);
  });
  PrometheusClient client(server.target(), {}, 5s);
  auto a = client.query("up", 1);
  ASSERT_FALSE(a);
  EXPECT_NE(a.error().message.find("Prometheus refused the query (bad_data): parse error"),
            std::string::npos)
      << a.error().message;
}

// A body sent in pieces of every size is read whole, as it streams in.
TEST(PrometheusClient, AnAnswerIsReadAsItStreamsIn) {
  const size_t n = 20'000;
  OneShotServer server([&](int fd, const std::string&) {
    send_text(fd, "HTTP/1.0 200 OK\r\n\r\n");
    std::string body = R"({"status":"success","data":{"resultType":"vector","result":[)";
    for (size_t i = 0; i < n; ++i)
      body += std::string(i ? "," : "") + R"({"metric":{"instance":"node-)" + std::to_string(i) +
              R"("},"value":[1800000000,")" + std::to_string(i) + R"("]})";
    body += "]}}";
    for (size_t at = 0, piece = 1; at < body.size(); at += piece, piece = piece % 8191 + 7)
      send_text(fd, body.substr(at, piece));
  });
  PrometheusClient client(server.target(), {}, 30s);
  auto a = client.query("up", 1);
  ASSERT_TRUE(a) << a.error().message;
  ASSERT_EQ(a->series.size(), n);
  EXPECT_EQ(a->series[n - 1].labels.at("instance"), "node-" + std::to_string(n - 1));
  EXPECT_EQ(a->series[n - 1].value, static_cast<double>(n - 1));
}

// A hostile answer of 64 MiB, within the bound on bytes: refused at the first series past a
// limit, with the limit named, and the rest of it never read.
TEST(PrometheusClient, AHostile64MiBAnswerIsRefusedEarlyWithTheLimitNamed) {
  struct Case {
    std::string series;  // one series, repeated
    std::string refusal;
  };
  std::string labels;
  for (int i = 0; i < 64; ++i)
    labels += std::string(i ? "," : "") + "\"l" + std::to_string(i) + "\":\"\"";
  const Case cases[] = {{R"({"metric":{"i":"1"},"value":[1,"1"]},)", "more than 500000 series"},
                        {R"({"metric":{)" + labels + R"(},"value":[1,"1"]},)",
                         "would take more than 128 MiB to hold"}};
  for (const auto& c : cases) {
    const size_t total = size_t{64} << 20;
    std::atomic<size_t> sent_in_all{0};
    {
      OneShotServer server([&](int fd, const std::string&) {
        send_text(fd, "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(total) + "\r\n\r\n");
        std::string head = R"({"status":"success","data":{"resultType":"vector","result":[)";
        std::string block;
        while (block.size() < (size_t{1} << 20)) block += c.series;
        size_t sent = head.size();
        send_text(fd, head);
        while (sent + block.size() <= total) {
          if (::send(fd, block.data(), block.size(), MSG_NOSIGNAL) <= 0) return;
          sent += block.size();
          sent_in_all = sent;
        }
        send_text(fd, std::string(total - sent, ' '));
      });
      PrometheusClient client(server.target(), {}, 60s);
      auto a = client.query("up", 1);
      ASSERT_FALSE(a);
      EXPECT_NE(a.error().message.find(c.refusal), std::string::npos) << a.error().message;
    }
    // The client stopped reading at the refusal: the rest could not be sent.
    EXPECT_LT(sent_in_all.load(), size_t{48} << 20);
  }
}

}  // namespace
}  // namespace gpureap::cluster

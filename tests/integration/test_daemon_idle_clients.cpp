// The daemon's HTTP endpoints under clients that connect and say nothing, or send a request
// one byte at a time: /healthz and /metrics keep answering for everyone else, and the daemon's
// memory stays bounded. No token is needed to open a connection, so this is what anyone on
// the network can do.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>

#include "support.h"

namespace gpureap::testing {
namespace {

using nlohmann::json;

int connect_to(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

long rss_kib(pid_t pid) {
  std::string v = proc_status_field(pid, "VmRSS");
  return v.empty() ? -1 : std::stol(v);
}

struct Sockets {
  std::vector<int> fds;
  ~Sockets() {
    for (int fd : fds) ::close(fd);
  }
};

class DaemonIdleClients : public ::testing::Test {
 protected:
  void SetUp() override {
    rlimit nofile{};
    ::getrlimit(RLIMIT_NOFILE, &nofile);
    nofile.rlim_cur = nofile.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &nofile);
    if (nofile.rlim_cur < 2200)
      GTEST_SKIP() << "needs 2200 open files, the hard limit is " << nofile.rlim_max;
  }
  FakeDevRoot dev_;
  FakeNvml nvml_{json{{"gpus", {{{"uuid", "GPU-0000"}, {"minor", 0}, {"total_bytes", 80 * GiB}}}}}};
};

TEST_F(DaemonIdleClients, IdleConnectionsNeverStarveHealthzOrMetrics) {
  REQUIRE_DOUBLE();
  DaemonProcess d({"--dev-root", dev_.path()}, nvml_.env());
  ASSERT_GT(d.port(), 0) << d.log();
  ASSERT_TRUE(wait_until([&] { return d.metric("gpureap_up ") == 1; })) << d.log();
  long before = rss_kib(d.pid());

  Sockets idle;
  for (int i = 0; i < 1000; ++i) {
    int fd = connect_to(d.port());
    ASSERT_GE(fd, 0) << "connection " << i;
    idle.fds.push_back(fd);
  }
  // A slow client too: half a request, then nothing.
  int slow = connect_to(d.port());
  ASSERT_GE(slow, 0);
  idle.fds.push_back(slow);
  ASSERT_EQ(::send(slow, "GET /metr", 9, 0), 9);

  for (int round = 0; round < 3; ++round) {
    auto h = http_request(d.port(), "GET", "/healthz");
    EXPECT_EQ(h.status, 200) << "round " << round << ": " << h.body;
    auto m = http_request(d.port(), "GET", "/metrics");
    EXPECT_EQ(m.status, 200) << "round " << round;
    EXPECT_NE(m.body.find("gpureap_up 1"), std::string::npos);
  }
  long during = rss_kib(d.pid());
  ASSERT_GT(before, 0);
  EXPECT_LT(during - before, 64 * 1024)
      << "RSS grew from " << before << " KiB to " << during << " KiB";
  EXPECT_TRUE(is_alive(d.pid()));
}

TEST_F(DaemonIdleClients, AFloodBeyondTheBoundEvictsTheOldestIdleConnection) {
  REQUIRE_DOUBLE();
  DaemonProcess d({"--dev-root", dev_.path()}, nvml_.env());
  ASSERT_GT(d.port(), 0) << d.log();
  Sockets idle;
  for (int i = 0; i < 2100; ++i) {
    int fd = connect_to(d.port());
    if (fd >= 0) idle.fds.push_back(fd);
  }
  auto h = http_request(d.port(), "GET", "/healthz");
  EXPECT_EQ(h.status, 200) << h.body;
}

TEST_F(DaemonIdleClients, MalformedAndOversizedRequestsGetAnAnswerAndAClose) {
  REQUIRE_DOUBLE();
  DaemonProcess d({"--dev-root", dev_.path()}, nvml_.env());
  ASSERT_GT(d.port(), 0) << d.log();
  auto exchange = [&](const std::string& bytes) {
    int fd = connect_to(d.port());
    EXPECT_GE(fd, 0);
    (void)!::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    std::string got;
    char buf[4096];
    for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;)
      got.append(buf, static_cast<size_t>(n));
    ::close(fd);
    return got;
  };
  EXPECT_EQ(exchange("garbage\r\n\r\n").rfind("HTTP/1.1 400", 0), 0u);
  EXPECT_EQ(exchange("GET /healthz HTTP/1.1\r\nX: " + std::string(20000, 'a') + "\r\n\r\n")
                .rfind("HTTP/1.1 431", 0),
            0u);
  auto ok = exchange("GET /api/v1/history?since=10%6d HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(ok.rfind("HTTP/1.1 200", 0), 0u) << ok.substr(0, 200);
  auto head = exchange("HEAD /metrics HTTP/1.1\r\n\r\n");
  EXPECT_EQ(head.rfind("HTTP/1.1 200", 0), 0u);
  EXPECT_EQ(head.find("gpureap_up"), std::string::npos) << "HEAD has no body";
}

}  // namespace
}  // namespace gpureap::testing

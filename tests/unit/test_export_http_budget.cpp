// The HTTP server's response budget (export/http_server): while a slow client holds a large
// response, a page that is not essential is refused with a clear 503 and Retry-After, the
// essential pages are still served, and the refused page is served again once the slow client
// has taken its response.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "export/http_server.h"

namespace gpureap::exporter {
namespace {

struct Answer {
  int status = 0;
  std::string head;
  size_t body_bytes = 0;
};

int connect_to(uint16_t port, int receive_buffer = 0) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  // A small receive window: the server cannot hand a large body to the kernel at once.
  if (receive_buffer > 0)
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

void send_get(int fd, const std::string& path) {
  std::string request = "GET " + path + " HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n";
  (void)!::write(fd, request.data(), request.size());
}

Answer read_answer(int fd) {
  std::string response;
  char buf[65536];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) response.append(buf, n);
  ::close(fd);
  Answer a;
  if (response.rfind("HTTP/1.1 ", 0) == 0) a.status = std::stoi(response.substr(9, 3));
  auto end = response.find("\r\n\r\n");
  if (end != std::string::npos) {
    a.head = response.substr(0, end + 4);
    a.body_bytes = response.size() - end - 4;
    if (a.status != 200) a.head += response.substr(end + 4);  // short answers: keep the text
  }
  return a;
}

Answer get(uint16_t port, const std::string& path) {
  int fd = connect_to(port);
  if (fd < 0) return {};
  send_get(fd, path);
  return read_answer(fd);
}

// GETs `path` until it is answered `status` (at most 30 s: the server's threads may wait for a
// CPU on a loaded machine); the last answer.
Answer get_until(uint16_t port, const std::string& path, int status) {
  Answer a;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while ((a = get(port, path)).status != status && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return a;
}

constexpr size_t kLargeBody = size_t{16} << 20;

class HttpBudget : public ::testing::Test {
 protected:
  void SetUp() override {
    auto large = std::make_shared<const std::string>(kLargeBody, 'x');
    std::vector<Route> routes = {
        {"/metrics", "metrics", "", "", false, true,
         [](const HttpRequest&) {
           return Reply{200, "text/plain", "up 1\n"};
         }},
        {"/large", "a large page", "", "", false, false,
         [large](const HttpRequest&) {
           return Reply{200, "text/plain", {}, large};
         }},
        {"/small", "a small page", "", "", false, false,
         [](const HttpRequest&) {
           return Reply{200, "text/plain", "small\n"};
         }},
    };
    // A budget of one byte: any response still being sent spends it.
    auto server = HttpServer::start({"127.0.0.1", 0}, std::move(routes), {{}, 2, 1});
    ASSERT_TRUE(server.ok()) << server.error().text();
    server_ = std::move(*server);
    port_ = server_->address().port;
  }

  std::unique_ptr<HttpServer> server_;
  uint16_t port_ = 0;
};

TEST_F(HttpBudget, ASlowClientsResponseRefusesOtherPagesButNotTheEssentialOnes) {
  // Nothing in flight: every page is served.
  EXPECT_EQ(get(port_, "/small").status, 200);

  int slow = connect_to(port_, 4096);
  ASSERT_GE(slow, 0);
  send_get(slow, "/large");
  // Until the server holds the slow client's response, a request may still be served.
  auto refused = get_until(port_, "/small", 503);
  ASSERT_EQ(refused.status, 503) << refused.head;
  EXPECT_NE(refused.head.find("Retry-After: 1\r\n"), std::string::npos) << refused.head;
  EXPECT_NE(refused.head.find("of responses to other clients (its limit is"), std::string::npos)
      << refused.head;
  EXPECT_NE(refused.head.find("retry in a second"), std::string::npos) << refused.head;
  // The essential page, the landing page and the errors are still served.
  auto metrics = get(port_, "/metrics");
  EXPECT_EQ(metrics.status, 200) << metrics.head;
  EXPECT_EQ(get(port_, "/").status, 200);
  EXPECT_EQ(get(port_, "/nothing-here").status, 404);

  // The slow client gets its whole response; then the budget is free again.
  auto large = read_answer(slow);
  EXPECT_EQ(large.status, 200);
  EXPECT_EQ(large.body_bytes, kLargeBody);
  auto again = get_until(port_, "/small", 200);
  EXPECT_EQ(again.status, 200) << again.head;
}

}  // namespace
}  // namespace gpureap::exporter

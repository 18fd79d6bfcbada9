// The daemon's routes (daemon/http_content) served by the HTTP transport (export/http_server):
// the landing page is generated from the route table and reads as it always has, the token is
// asked everywhere but on an open route, and each path reaches its own handler.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "daemon/http_content.h"
#include "daemon/wake_pacer.h"
#include "export/http_server.h"

namespace gpureap::daemon {
namespace {

struct HttpAnswer {
  int status = 0;
  std::string body;
};

// One GET over a fresh connection (the server closes it after the response).
HttpAnswer get(uint16_t port, const std::string& path, const std::string& token = "") {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return {};
  }
  std::string request = "GET " + path + " HTTP/1.1\r\nHost: test\r\nConnection: close\r\n";
  if (!token.empty()) request += "Authorization: Bearer " + token + "\r\n";
  request += "\r\n";
  (void)!::write(fd, request.data(), request.size());
  std::string response;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) response.append(buf, n);
  ::close(fd);
  HttpAnswer a;
  if (response.rfind("HTTP/1.1 ", 0) == 0) a.status = std::stoi(response.substr(9, 3));
  auto body = response.find("\r\n\r\n");
  if (body != std::string::npos) a.body = response.substr(body + 4);
  return a;
}

// The page the transport served before the daemon registered its routes as a table.
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
<li><a href="api/v1/releases">/api/v1/releases</a>: the latest final closes of GPU device files, with who held each last</li>
<li><a href="api/v1/status">/api/v1/status</a>: how the daemon follows GPU device files here</li>
</ul>
<p>Read-only: no endpoint can signal a process.</p>
</body></html>
)";

class DaemonHttpContent : public ::testing::Test {
 protected:
  void SetUp() override {
    auto server = exporter::HttpServer::start({"127.0.0.1", 0}, content_.routes(), {"s3cret"});
    ASSERT_TRUE(server.ok()) << server.error().text();
    server_ = std::move(*server);
    port_ = server_->address().port;
  }

  // No sample published yet: the pages that need one say so.
  SamplePublisher samples_{{}, std::make_shared<history::History>()};
  HttpContent content_{samples_};
  std::unique_ptr<exporter::HttpServer> server_;
  uint16_t port_ = 0;
};

TEST_F(DaemonHttpContent, TheLandingPageListsTheRoutesAsItAlwaysHas) {
  auto page = get(port_, "/", "s3cret");
  EXPECT_EQ(page.status, 200);
  EXPECT_EQ(page.body, kLandingPage);
  const auto routes = content_.routes();
  ASSERT_EQ(routes.size(), 8u);
  for (const auto& r : routes) EXPECT_NE(page.body.find(">" + r.path), std::string::npos) << r.path;
}

TEST_F(DaemonHttpContent, EveryPathReachesItsOwnHandler) {
  EXPECT_EQ(get(port_, "/metrics", "s3cret").status, 503);  // no sample yet
  EXPECT_EQ(get(port_, "/api/v1/snapshot", "s3cret").status, 503);
  auto releases = get(port_, "/api/v1/releases", "s3cret");
  EXPECT_EQ(releases.status, 200);
  EXPECT_NE(releases.body.find("\"schema\""), std::string::npos) << releases.body;
  auto status = get(port_, "/api/v1/status", "s3cret");
  EXPECT_EQ(status.status, 200);
  EXPECT_NE(status.body.find("gpureap.status/v1"), std::string::npos) << status.body;
  // The pacing as the pacer has it: a burst of wake-ups, then one per gap.
  auto tracking = nlohmann::json::parse(status.body)["holder_tracking"];
  EXPECT_EQ(tracking["wake_burst"], WakePacer::kWakeBurst);
  EXPECT_EQ(tracking["min_wake_gap_ms"], WakePacer::kMinWakeGap.count());
  auto bad = get(port_, "/api/v1/history?gpu=zero", "s3cret");
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body.find("gpu must be a GPU index"), std::string::npos) << bad.body;
  auto missing = get(port_, "/nothing-here", "s3cret");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.body, "no such page: /nothing-here (see / for the list)\n");
}

TEST_F(DaemonHttpContent, OnlyTheOpenRouteAnswersWithoutTheToken) {
  for (const auto& r : content_.routes()) {
    auto answer = get(port_, r.path);
    if (r.open)
      EXPECT_NE(answer.status, 401) << r.path;
    else
      EXPECT_EQ(answer.status, 401) << r.path;
  }
  EXPECT_EQ(get(port_, "/").status, 401);
  EXPECT_EQ(get(port_, "/nothing-here").status, 401);  // no hint of what exists
  EXPECT_EQ(get(port_, "/healthz").status, 503);       // open, and no sample yet
}

}  // namespace
}  // namespace gpureap::daemon

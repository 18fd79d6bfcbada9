// `gpureap report`: the running daemon's history drawn as a page (the gone PID in the ghost
// table with the worker that keeps it, the GPU's capacity), a saved history drawn offline, and
// the failures a user can meet, each with what to do.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "support.h"

namespace gpureap::testing {
namespace {

using nlohmann::json;

json report_scenario(json processes) {
  return {{"gpus",
           {{{"name", "NVIDIA H200"},
             {"uuid", "GPU-0000"},
             {"minor", 0},
             {"total_bytes", 80 * GiB},
             {"processes", processes}}}}};
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(ReportCli, TheDaemonsHistoryWithItsGhostAndItsKeeper) {
  REQUIRE_DOUBLE();
  FakeDevRoot dev;
  Ready ready, worker_ready;
  Child job{[&] {
    hold(dev.dev("nvidia0"));
    ready.signal();
  }};
  // The gone trainer led its group; its worker is in it.
  auto trainer = gone_trainer(dev);
  ready.wait();
  const pid_t gone = trainer->trainer;
  FakeNvml nvml(report_scenario(
      json::array({{{"pid", job.pid()}, {"used_bytes", 4 * GiB}},
                   {{"pid", gone}, {"used_bytes", 8 * GiB}, {"holders", {trainer->worker}}}})));
  TempDir dir;
  std::ofstream(dir.file("config.toml"))
      << "interval = \"200ms\"\naudit_log = \"" << dir.file("audit.jsonl") << "\"\n";
  DaemonProcess d({"--config", dir.file("config.toml"), "--dev-root", dev.path()}, nvml.env());
  // The report is drawn once the history names the worker as the gone PID's keeper.
  ASSERT_TRUE(wait_until([&] {
    auto doc = json::parse(d.get("/api/v1/history?since=1m").body, nullptr, false);
    if (!doc.is_object() || !doc["processes"].is_array()) return false;
    for (const auto& p : doc["processes"])
      if (p["pid"] == gone && !p["keepers"].empty()) return true;
    return false;
  })) << d.get("/api/v1/history?since=1m").body.substr(0, 4000);
  auto r = run_gpureap({"report", "--config", dir.file("config.toml"), "--daemon",
                        "127.0.0.1:" + std::to_string(d.port()), "--since", "1m", "--out",
                        dir.file("page.html")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("wrote " + dir.file("page.html") + " (1 GPU, 1 ghost"), std::string::npos)
      << r.err;
  const std::string html = read_text(dir.file("page.html"));
  EXPECT_EQ(count(html, "<section class=\"gpu\""), 1u);
  // The axis fits the data: the 80 GiB total is named above it.
  EXPECT_NE(
      html.find("class=\"capacity off-scale\" data-bytes=\"" + std::to_string(80 * GiB) + "\""),
      std::string::npos);
  // Over HTTP too the history carries the incident journal: the Now box and the lanes.
  EXPECT_NE(html.find("<section class=\"now\""), std::string::npos);
  EXPECT_NE(html.find("<svg class=\"timeline\""), std::string::npos);
  EXPECT_NE(html.find("data-series=\"pid-" + std::to_string(job.pid()) + "\""), std::string::npos);
  const auto row = html.find("<tr data-pid=\"" + std::to_string(gone) + "\"");
  ASSERT_NE(row, std::string::npos) << html;
  const std::string ghost = html.substr(row, html.find("</tr>", row) - row);
  EXPECT_NE(ghost.find(std::to_string(trainer->worker)), std::string::npos) << ghost;
  EXPECT_NE(ghost.find("8.0 GiB"), std::string::npos) << ghost;
  EXPECT_NE(ghost.find("still held"), std::string::npos) << ghost;
  // No audit log yet: the page says so instead of failing.
  EXPECT_NE(html.find("No audit log at"), std::string::npos);
}

TEST(ReportCli, FailuresSayWhatToDo) {
  TempDir dir;
  std::ofstream(dir.file("empty.toml")) << "";
  auto missing =
      run_gpureap({"report", "--from", dir.file("nope.json"), "--out", dir.file("p.html")});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("cannot read the history file"), std::string::npos) << missing.err;
  std::ofstream(dir.file("other.json")) << R"({"schema":"gpureap.snapshot/v1"})";
  auto other =
      run_gpureap({"report", "--from", dir.file("other.json"), "--out", dir.file("p.html")});
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_NE(other.err.find("not a gpureap.history/v1 document"), std::string::npos) << other.err;
  // Port 1 on loopback: nothing listens there.
  auto down = run_gpureap({"report", "--config", dir.file("empty.toml"), "--daemon", "127.0.0.1:1",
                           "--out", dir.file("p.html")});
  EXPECT_EQ(down.exit_code, 2);
  EXPECT_NE(down.err.find("cannot reach the daemon at 127.0.0.1:1"), std::string::npos) << down.err;
  EXPECT_NE(down.err.find("--from FILE"), std::string::npos) << down.err;
  EXPECT_FALSE(wait_for_file(dir.file("p.html"), 0));
}

// On the daemon's machine `report` asks its local socket (whose server it verifies): no token,
// no TCP port. The config's listen points nowhere here, so only the socket can have answered.
TEST(ReportCli, TheDaemonsHistoryComesThroughItsLocalSocket) {
  REQUIRE_DOUBLE();
  FakeDevRoot dev;
  FakeNvml nvml(report_scenario(json::array()));
  TempDir dir;
  std::ofstream(dir.file("config.toml"))
      << "interval = \"200ms\"\nlisten = \"127.0.0.1:1\"\nlocal_socket = \""
      << dir.file("gpureap.sock") << "\"\n";
  DaemonProcess d({"--config", dir.file("config.toml"), "--dev-root", dev.path()}, nvml.env());
  ASSERT_TRUE(d.wait_log(kServingLocalSocket + dir.file("gpureap.sock"))) << d.log();
  ASSERT_TRUE(wait_until([&] { return d.get("/api/v1/history?since=1m").status == 200; }));
  auto r = run_gpureap({"report", "--config", dir.file("config.toml"), "--since", "1m", "--out",
                        dir.file("page.html")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("(1 GPU, 0 ghosts"), std::string::npos) << r.err;
}

// While the daemon is down any user may bind its port: `report` must not hand that user the
// daemon's bearer token, whether the port comes from the config or from --daemon.
TEST(ReportCli, ASquattedPortNeverGetsTheToken) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root, to squat as another user";
  TempDir dir;
  const std::string token = "s3cret-token-of-the-daemon";
  std::ofstream(dir.file("token")) << token << "\n";
  ASSERT_EQ(::chmod(dir.file("token").c_str(), 0600), 0);
  int got[2];
  ASSERT_EQ(::pipe(got), 0);
  Ready listening;
  Child squatter([&] {
    ::close(got[0]);
    if (::setresuid(65534, 65534, 65534) != 0) ::_exit(2);
    int l = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(l, reinterpret_cast<sockaddr*>(&a), len) != 0 || ::listen(l, 8) != 0 ||
        ::getsockname(l, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      ::_exit(3);
    listening.send(ntohs(a.sin_port));
    for (;;) {
      int c = ::accept(l, nullptr, nullptr);
      if (c < 0) continue;
      char buf[4096];
      pollfd p{c, POLLIN, 0};
      while (::poll(&p, 1, 2000) > 0) {
        ssize_t n = ::read(c, buf, sizeof buf);
        if (n <= 0) break;
        if (::write(got[1], buf, static_cast<size_t>(n)) < 0) ::_exit(4);
      }
      ::close(c);
    }
  });
  ::close(got[1]);
  const std::string port = std::to_string(listening.receive());
  std::ofstream(dir.file("config.toml"))
      << "listen = \"127.0.0.1:" << port << "\"\nauth_token_file = \"" << dir.file("token")
      << "\"\nlocal_socket = \"" << dir.file("no-daemon.sock") << "\"\n";
  for (bool named : {false, true}) {
    std::vector<std::string> args{"report", "--config", dir.file("config.toml"), "--out",
                                  dir.file("p.html")};
    if (named) args.insert(args.end(), {"--daemon", "127.0.0.1:" + port});
    auto r = run_gpureap(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("not held by the daemon"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("uid 65534"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("the bearer token was not sent"), std::string::npos) << r.err;
  }
  squatter.kill_and_reap();
  ::fcntl(got[0], F_SETFL, O_NONBLOCK);
  std::string received;
  char buf[4096];
  for (ssize_t n; (n = ::read(got[0], buf, sizeof buf)) > 0;) received.append(buf, n);
  ::close(got[0]);
  EXPECT_EQ(received.find(token), std::string::npos) << received;
  EXPECT_EQ(received.find("Authorization"), std::string::npos) << received;
}

}  // namespace
}  // namespace gpureap::testing

// `gpureap report`: the running daemon's history drawn as a page (the gone PID in the ghost
// table with the worker that keeps it, the GPU's capacity), a saved history drawn offline, and
// the failures a user can meet, each with what to do.
#include <gtest/gtest.h>

#include <fstream>

#include "support.h"

namespace gpureap::testing {
namespace {

using nlohmann::json;

json scenario(json processes) {
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
  Child worker{[&] {
    hold(dev.dev("nvidia0"));
    worker_ready.signal();
  }};
  ready.wait();
  worker_ready.wait();
  const pid_t gone = dead_pid();
  FakeNvml nvml(scenario(
      json::array({{{"pid", job.pid()}, {"used_bytes", 4 * GiB}},
                   {{"pid", gone}, {"used_bytes", 8 * GiB}, {"holders", {worker.pid()}}}})));
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
  EXPECT_NE(html.find("class=\"capacity\" data-bytes=\"" + std::to_string(80 * GiB) + "\""),
            std::string::npos);
  EXPECT_NE(html.find("data-series=\"pid-" + std::to_string(job.pid()) + "\""), std::string::npos);
  const auto row = html.find("<tr data-pid=\"" + std::to_string(gone) + "\"");
  ASSERT_NE(row, std::string::npos) << html;
  const std::string ghost = html.substr(row, html.find("</tr>", row) - row);
  EXPECT_NE(ghost.find(std::to_string(worker.pid())), std::string::npos) << ghost;
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

}  // namespace
}  // namespace gpureap::testing

// `gpureap top` showing the daemon's samples (its local socket) on a real terminal (tmux): the
// daemon's view, said in the status line, and top's own sampling when the daemon goes away or
// --no-daemon is given.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <fstream>

#include "support.h"

namespace gpureap::testing {
namespace {

using nlohmann::json;

// A server holding a stand-in nvidia0 with 4 GiB listed, seen by a daemon on that dev root.
// top runs without roots of its own (so it may ask the daemon): only through the daemon does it
// see the stand-in GPU file and the double's memory.
struct DaemonScene {
  FakeDevRoot dev;
  Ready ready;
  Child server{[this] {
    ::prctl(PR_SET_NAME, "model_server");
    hold(dev.dev("nvidia0"));
    ready.signal();
  }};
  std::unique_ptr<FakeNvml> nvml;
  TempDir run;
  std::string socket = run.file("gpureap.sock");
  std::unique_ptr<DaemonProcess> daemon;

  DaemonScene() {
    ready.wait();
    nvml = std::make_unique<FakeNvml>(
        json{{"gpus",
              {{{"name", "NVIDIA H200"},
                {"uuid", "GPU-top-0"},
                {"minor", 0},
                {"total_bytes", 80 * GiB},
                {"processes", {{{"pid", server.pid()}, {"used_bytes", 4 * GiB}}}}}}}});
    std::string config = run.file("config.toml");
    std::ofstream(config) << "interval = \"200ms\"\nlocal_socket = \"" << socket << "\"\n";
    daemon = std::make_unique<DaemonProcess>(
        std::vector<std::string>{"--config", config, "--dev-root", dev.path()}, nvml->env());
    EXPECT_TRUE(daemon->wait_log(kServingLocalSocket + socket)) << daemon->log();
  }
  std::vector<std::string> client_env() const {
    return {"GPUREAP_DAEMON_SOCKET=" + socket, "GPUREAP_NVML_LIBRARY=" + kNoNvml};
  }
};

TEST(TopDaemon, ShowsTheDaemonsViewAndSaysSo) {
  REQUIRE_TERMINAL();
  DaemonScene scene;
  TmuxGpureap top({"top", "-d", "300ms"}, scene.client_env(), 140, 40);
  auto s = top.wait_until(
      [&](const std::string& sc) {
        return !rows_of(sc, scene.server.pid()).empty() &&
               sc.find("from the gpureap daemon") != std::string::npos;
      },
      "the server's row from the daemon");
  EXPECT_NE(rows_of(s, scene.server.pid()).front().find("4.0 GiB"), std::string::npos) << s;
  EXPECT_NE(s.find("H200"), std::string::npos) << s;  // the daemon's driver, not this one's

  // The daemon goes away: top says so and samples on its own (this machine has no such GPU).
  scene.daemon->signal(SIGTERM);
  EXPECT_EQ(scene.daemon->wait_exit(), 0);
  s = top.wait_for("the gpureap daemon stopped answering");
  top.wait_until(
      [&](const std::string& sc) {
        return sc.find("from the gpureap daemon") == std::string::npos;
      },
      "the status line without the daemon");
  top.keys({"q"});
  EXPECT_EQ(top.exit_code(), 0);
}

TEST(TopDaemon, NoDaemonSamplesHere) {
  REQUIRE_TERMINAL();
  DaemonScene scene;
  TmuxGpureap top({"top", "-d", "300ms", "--no-daemon"}, scene.client_env(), 140, 40);
  // The title gives the sample's clock once there is one: its own engine has collected twice
  // once the clock it shows has moved on. No daemon line then, and no stand-in GPU file known.
  auto title = [](const std::string& sc) {
    auto lines = lines_of(sc);
    return lines.empty() || lines[0].find(" every ") == std::string::npos ? "" : lines[0];
  };
  const std::string first = title(top.wait_until(
      [&](const std::string& sc) { return !title(sc).empty(); }, "a sample's clock in the title"));
  auto s = top.wait_until(
      [&](const std::string& sc) { return !title(sc).empty() && title(sc) != first; },
      "a later sample's clock in the title");
  EXPECT_EQ(s.find("from the gpureap daemon"), std::string::npos) << s;
  EXPECT_TRUE(rows_of(s, scene.server.pid()).empty()) << s;
  top.keys({"q"});
  EXPECT_EQ(top.exit_code(), 0);
}

}  // namespace
}  // namespace gpureap::testing

// `gpureap top` on a real terminal (tmux), against real processes and the NVML test double.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "support.h"

namespace gpureap::testing {
namespace {

using nlohmann::json;

json gpu_json(unsigned index, json processes) {
  return {{"name", "NVIDIA H200"},
          {"uuid", "GPU-" + std::to_string(index)},
          {"minor", index},
          {"total_bytes", 80 * GiB},
          {"utilization_percent", 40},
          {"temperature_celsius", 55},
          {"power_mw", 300000},
          {"processes", processes}};
}

// A dead trainer whose two DataLoader-like workers keep 8 GiB on GPU 0 alive, and a healthy
// server with 4 GiB on GPU 1.
struct TopScene {
  FakeDevRoot dev;
  Ready ready;
  pid_t ghost = 0, w1 = 0, w2 = 0;
  std::unique_ptr<Child> server;
  KillStrays strays;
  std::unique_ptr<FakeNvml> nvml;

  TopScene() {
    Child trainer([&] {
      ::setpgid(0, 0);
      hold(dev.dev("nvidiactl"));
      hold(dev.dev("nvidia0"));
      for (int i = 0; i < 2; ++i) {
        pid_t c = ::fork();
        if (c == 0) {
          ::prctl(PR_SET_NAME, "pt_data_worker");
          for (;;) ::pause();
        }
        ready.send(c);
      }
      ::_exit(0);
    });
    ghost = trainer.pid();
    w1 = static_cast<pid_t>(ready.receive());
    w2 = static_cast<pid_t>(ready.receive());
    strays.pids = {w1, w2};
    trainer.kill_and_reap();
    server = std::make_unique<Child>([&] {
      ::prctl(PR_SET_NAME, "model_server");
      hold(dev.dev("nvidiactl"));
      hold(dev.dev("nvidia1"));
      ready.signal();
    });
    ready.wait();
    nvml = std::make_unique<FakeNvml>(scenario());
  }

  json scenario(const std::string& block_call = "") const {
    json s = {{"gpus",
               {gpu_json(0, json::array({{{"pid", ghost},
                                          {"used_bytes", 8 * GiB},
                                          {"holders", {ghost, w1, w2}}}})),
                gpu_json(1, json::array({{{"pid", server->pid()}, {"used_bytes", 4 * GiB}}}))}}};
    if (!block_call.empty()) s["block_call"] = block_call;
    return s;
  }

  // Replaces the scenario at once (the double re-reads it when the file changes).
  void rewrite(const json& s) const {
    std::string tmp = nvml->scenario_path() + ".new";
    std::ofstream(tmp) << s.dump(2);
    std::rename(tmp.c_str(), nvml->scenario_path().c_str());
  }

  std::vector<std::string> args(std::vector<std::string> extra = {}) const {
    std::vector<std::string> a = {"top", "--dev-root", dev.path(), "-d", "300ms"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
};

bool shows_row(const std::string& screen, pid_t pid) {
  return !rows_of(screen, pid).empty();
}

TEST(TopTmux, GhostRowsAreHighlightedAndAFilterNarrows) {
  REQUIRE_TERMINAL();
  TopScene scene;
  TmuxGpureap top(scene.args(), scene.nvml->env());
  auto s = top.wait_until(
      [&](const std::string& sc) {
        return shows_row(sc, scene.ghost) && shows_row(sc, scene.w1) &&
               shows_row(sc, scene.server->pid());
      },
      "the ghost, its workers and the server");
  EXPECT_NE(s.find("gpureap top"), std::string::npos);
  EXPECT_NE(s.find("8.0 GiB on GPU 0 held by ghosts"), std::string::npos) << s;
  EXPECT_NE(rows_of(s, scene.ghost).front().find("no-such-process"), std::string::npos);
  EXPECT_NE(rows_of(s, scene.w1).front().find("inherited-holder"), std::string::npos);

  // Colours: the ghost and the workers keeping it are red, the healthy server is not.
  auto colored = top.screen(true);
  ASSERT_FALSE(rows_of(colored, scene.ghost).empty()) << colored;
  EXPECT_TRUE(has_sgr_color(rows_of(colored, scene.ghost).front(), 31))
      << rows_of(colored, scene.ghost).front();
  EXPECT_TRUE(has_sgr_color(rows_of(colored, scene.w2).front(), 31));
  auto server_row = rows_of(colored, scene.server->pid());
  ASSERT_FALSE(server_row.empty());
  EXPECT_FALSE(has_sgr_color(server_row.front(), 31)) << server_row.front();

  // A filter narrows the table as it is typed.
  top.keys({"/"});
  top.type("pt_data");
  s = top.wait_until([&](const std::string& sc) { return !shows_row(sc, scene.server->pid()); },
                     "the filter to narrow");
  EXPECT_TRUE(shows_row(s, scene.w1));
  EXPECT_TRUE(shows_row(s, scene.w2));
  EXPECT_FALSE(shows_row(s, scene.ghost));
  top.keys({"Enter"});
  s = top.wait_for("filter \"pt_data\"");
  EXPECT_FALSE(shows_row(s, scene.server->pid()));
  top.keys({"c"});  // clears it
  top.wait_until([&](const std::string& sc) { return shows_row(sc, scene.server->pid()); },
                 "the filter to clear");

  // Tree mode puts the workers under the gone trainer whose memory they keep.
  top.keys({"t"});
  s = top.wait_for("tree ·");
  auto nested = [&](const std::string& sc, pid_t pid) {
    auto row = rows_of(sc, pid);
    return !row.empty() && (row.front().find("├─") != std::string::npos ||
                            row.front().find("└─") != std::string::npos);
  };
  EXPECT_TRUE(nested(s, scene.w1) && nested(s, scene.w2)) << s;
  EXPECT_FALSE(nested(s, scene.ghost));  // the gone trainer is their root

  // Ctrl-C quits and gives the terminal back.
  top.keys({"C-c"});
  EXPECT_EQ(top.exit_code(), 0);
  EXPECT_EQ(top.value("#{alternate_on}"), "0");
  EXPECT_EQ(top.screen().find("gpureap top"), std::string::npos);  // its screen is gone
}

TEST(TopTmux, HtopFunctionKeysSearchTreeSortScrollAndQuit) {
  REQUIRE_TERMINAL();
  TopScene scene;
  TmuxGpureap top(scene.args(), scene.nvml->env());
  const pid_t server = scene.server->pid();
  auto s = top.wait_until([&](const std::string& sc) { return shows_row(sc, server); },
                          "the server's row");
  // F3 searches as / does; Escape clears it.
  top.keys({"F3"});
  top.type("pt_data");
  top.wait_until([&](const std::string& sc) { return !shows_row(sc, server); }, "F3 to filter");
  top.keys({"Escape"});
  top.wait_until([&](const std::string& sc) { return shows_row(sc, server); }, "Esc to clear");
  // F5 is the tree, F6 the next sort column (memory, then SM%).
  top.keys({"F5"});
  top.wait_for("tree ·");
  top.keys({"F5", "F6"});
  s = top.wait_for("SM%▼");
  EXPECT_EQ(s.find("tree ·"), std::string::npos) << s;
  // Left and Right scroll the commands sideways (the server runs this test program, forked);
  // sorting stays where it was.
  auto row = [&](const std::string& sc) {
    auto rows = rows_of(sc, server);
    return rows.empty() ? std::string() : rows.front();
  };
  const std::string program = "gpureap_integration";
  ASSERT_NE(row(s).find(program), std::string::npos) << s;
  top.keys({"Right"});
  s = top.wait_until(
      [&](const std::string& sc) {
        return row(sc).find("gpureap_") == std::string::npos &&
               row(sc).find("integration") != std::string::npos;
      },
      "Right to scroll the command by 8 columns");
  EXPECT_NE(s.find("SM%▼"), std::string::npos) << s;
  top.keys({"Left"});
  top.wait_until([&](const std::string& sc) { return row(sc).find(program) != std::string::npos; },
                 "Left to scroll back");
  top.keys({"F10"});
  EXPECT_EQ(top.exit_code(), 0);
}

TEST(TopTmux, KillThroughTheUiEndsTheSelectedHolderAndShowsTheMemoryReleased) {
  REQUIRE_TERMINAL();
  TopScene scene;
  TmuxGpureap top(scene.args({"--grace", "2s", "--wait-release", "20s"}), scene.nvml->env(), 140,
                  40);
  top.wait_until([&](const std::string& sc) { return shows_row(sc, scene.server->pid()); },
                 "the server row");
  // Select the server: filter down to it (its name), it is then the selected row.
  top.keys({"/"});
  top.type("model_server");
  top.keys({"Enter"});
  top.wait_until(
      [&](const std::string& sc) {
        return !shows_row(sc, scene.ghost) && shows_row(sc, scene.server->pid());
      },
      "only the server");
  top.keys({"k"});
  auto s = top.wait_for("Kill 1 process?");
  EXPECT_NE(s.find("SIGTERM"), std::string::npos) << s;
  EXPECT_TRUE(is_alive(scene.server->pid()));  // nothing happens before the confirmation
  top.keys({"y"});
  s = top.wait_for("Freed GPU 1 4.0 GiB", 30000);
  EXPECT_NE(s.find("released"), std::string::npos) << s;
  EXPECT_EQ(end_signal(scene.server->pid()), SIGTERM);
  top.keys({"Enter"});  // closes the outcome
  top.keys({"c"});
  s = top.wait_until(
      [&](const std::string& sc) {
        return shows_row(sc, scene.ghost) && !shows_row(sc, scene.server->pid());
      },
      "the table without the server");

  // The ghost: killing its row kills the workers that keep its memory.
  top.keys({"/"});
  top.type("no-such-process");
  top.keys({"Enter"});
  top.wait_until(
      [&](const std::string& sc) { return shows_row(sc, scene.ghost) && !shows_row(sc, scene.w1); },
      "only the ghost");
  top.keys({"k"});
  // The dialog's title and its list of processes may reach the screen in separate writes.
  s = top.wait_until(
      [&](const std::string& sc) {
        return sc.find("Kill 2 processes?") != std::string::npos &&
               sc.find(std::to_string(scene.w1)) != std::string::npos &&
               sc.find(std::to_string(scene.w2)) != std::string::npos;
      },
      "the kill dialog naming both workers");
  top.keys({"y"});
  s = top.wait_for("8.0 GiB released", 30000);
  EXPECT_NE(s.find("Freed GPU 0 8.0 GiB"), std::string::npos) << s;
  EXPECT_TRUE(wait_gone(scene.w1) || !is_alive(scene.w1));
  EXPECT_FALSE(is_alive(scene.w2));
  top.keys({"Escape", "q"});
  EXPECT_EQ(top.exit_code(), 0);
}

TEST(TopTmux, ReadonlyRefusesToKill) {
  REQUIRE_TERMINAL();
  TopScene scene;
  auto env = scene.nvml->env();
  env.push_back("NO_COLOR=1");
  TmuxGpureap top(scene.args({"--readonly"}), env);
  auto s = top.wait_until([&](const std::string& sc) { return shows_row(sc, scene.ghost); },
                          "the ghost row");
  EXPECT_NE(s.find("READ-ONLY"), std::string::npos);
  auto plain = top.screen(true);  // NO_COLOR: attributes only, no colour
  EXPECT_FALSE(has_sgr_color(plain, 31)) << plain;
  EXPECT_FALSE(has_sgr_color(plain, 33));
  top.keys({"k"});
  s = top.wait_for("read-only (--readonly): actions are disabled");
  EXPECT_EQ(s.find("Kill 1 process?"), std::string::npos);
  // A message goes with the next key; F9 (kill) says it again.
  top.keys({"y", "F9"});
  top.wait_for("read-only (--readonly)");
  top.keys({"y"});
  EXPECT_TRUE(is_alive(scene.server->pid()));
  EXPECT_TRUE(is_alive(scene.w1));
  top.keys({"q"});
  EXPECT_EQ(top.exit_code(), 0);
  EXPECT_TRUE(is_alive(scene.server->pid()));
}

TEST(TopTmux, NonRootSeesWhatItCannotActOn) {
  REQUIRE_TERMINAL();
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run gpureap as nobody";
  if (!binary_runnable_as_nobody()) GTEST_SKIP() << "nobody cannot reach the gpureap binary here";
  TopScene scene;
  // nobody must be able to read the dev root and the scenario.
  ::chmod(scene.dev.path().c_str(), 0755);
  ::chmod(scene.nvml->path().c_str(), 0755);
  ::chmod(scene.nvml->scenario_path().c_str(), 0644);
  TmuxGpureap top(scene.args(), scene.nvml->env(), 120, 40,
                  {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"});
  auto s = top.wait_until([&](const std::string& sc) { return shows_row(sc, scene.server->pid()); },
                          "the server row");
  EXPECT_NE(s.find("not root"), std::string::npos) << s;
  EXPECT_NE(s.find("view incomplete"),
            std::string::npos);  // other users' open files are unreadable
  top.keys({"/"});
  top.type("model_server");
  top.keys({"Enter"});
  top.wait_until(
      [&](const std::string& sc) {
        return !shows_row(sc, scene.ghost) && shows_row(sc, scene.server->pid());
      },
      "only the server");
  top.keys({"Enter"});
  top.wait_for("you cannot signal it");
  top.keys({"Escape", "k"});
  s = top.wait_for("Nothing to signal");
  EXPECT_NE(s.find("not permitted"), std::string::npos) << s;
  top.keys({"y"});  // nothing to confirm
  top.keys({"Escape", "q"});
  EXPECT_EQ(top.exit_code(), 0);
  EXPECT_TRUE(is_alive(scene.server->pid()));
  EXPECT_TRUE(no_signal_pending(scene.server->pid()));
}

TEST(TopTmux, AWedgedDriverShowsNotAnsweringAndTheUiStaysResponsive) {
  REQUIRE_TERMINAL();
  TopScene scene;
  TmuxGpureap top(scene.args(), scene.nvml->env());
  top.wait_until([&](const std::string& sc) { return shows_row(sc, scene.ghost); },
                 "the ghost row");
  scene.rewrite(scene.scenario("nvmlDeviceGetMemoryInfo"));  // the next call blocks forever
  auto s = top.wait_for("GPU driver not answering", 30000);
  EXPECT_NE(s.find("an NVML call is blocked"), std::string::npos) << s;
  // /proc is still sampled: a process that opens a GPU file now shows up.
  Child late([&] {
    hold(scene.dev.dev("nvidia1"));
    scene.ready.signal();
  });
  scene.ready.wait();
  top.wait_until([&](const std::string& sc) { return shows_row(sc, late.pid()); },
                 "a new holder while the driver hangs");
  top.keys({"?"});
  top.wait_for("gpureap top: keys");
  top.keys({"Escape"});
  top.wait_until(
      [](const std::string& sc) { return sc.find("gpureap top: keys") == std::string::npos; },
      "help to close");
  top.keys({"q"});
  EXPECT_EQ(top.exit_code(), 0);  // quitting does not wait for the stuck call
}

TEST(TopTmux, WorksAt80x24AndFollowsResizes) {
  REQUIRE_TERMINAL();
  TopScene scene;
  TmuxGpureap top(scene.args(), scene.nvml->env(), 80, 24);
  auto s = top.wait_until([&](const std::string& sc) { return shows_row(sc, scene.server->pid()); },
                          "the server row");
  EXPECT_NE(s.find("q quit"), std::string::npos);
  auto fits = [](const std::string& sc, size_t width) {
    size_t pos = 0, lines = 0;
    while (pos < sc.size()) {
      size_t eol = sc.find('\n', pos);
      if (eol == std::string::npos) eol = sc.size();
      // Columns, not bytes: count UTF-8 lead bytes.
      size_t cols = 0;
      for (size_t i = pos; i < eol; ++i) cols += (static_cast<unsigned char>(sc[i]) & 0xC0) != 0x80;
      if (cols > width) return false;
      pos = eol + 1;
      ++lines;
    }
    return lines > 0;
  };
  EXPECT_TRUE(fits(s, 80)) << s;
  top.keys({"Enter"});  // the detail pane, with the doctor's findings
  s = top.wait_for("Enter closes");
  top.keys({"Escape"});

  top.resize(30, 10);
  top.wait_for("needs 40x8");
  top.resize(150, 45);
  s = top.wait_until(
      [&](const std::string& sc) {
        return shows_row(sc, scene.server->pid()) && sc.find("CONTAINER") == std::string::npos &&
               sc.find("AGE") != std::string::npos;
      },
      "the full table at 150 columns");
  EXPECT_TRUE(fits(s, 150));
  top.keys({"q"});
  EXPECT_EQ(top.exit_code(), 0);
}

}  // namespace
}  // namespace gpureap::testing

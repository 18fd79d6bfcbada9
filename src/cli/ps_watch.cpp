#include "cli/ps_watch.h"

#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <ctime>
#include <iostream>

#include "core/duration.h"
#include "engine/engine.h"
#include "output/escape.h"
#include "output/ps_view.h"
#include "output/snapshot_json.h"
#include "reap/arguments.h"
#include "tui/watch.h"

namespace gpureap::cli {
namespace {

volatile std::sig_atomic_t g_stop = 0;
void on_signal(int) {
  g_stop = 1;
}

void install_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &sa, nullptr);
}

std::pair<size_t, size_t> terminal_size() {
  winsize ws{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0)
    return {ws.ws_col, ws.ws_row};
  return {80, 24};
}

std::string clock_text(std::chrono::system_clock::time_point t) {
  std::time_t tt = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  ::localtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

}  // namespace

int run_ps_watch(const GlobalOptions& g, const PsOptions& o) {
  if (g.csv)
    return fail({"--watch cannot print CSV",
                 "use --watch alone for the table, or --watch --json for JSON lines"});
  std::string spec = o.watch->empty() ? "2s" : *o.watch;
  auto interval = core::parse_duration(spec);
  if (!interval) return fail({"--watch: " + interval.error().message, interval.error().hint});
  if (*interval < std::chrono::milliseconds(100))
    return fail({"--watch " + spec + " is too short", "use 100ms or more"});
  // A wedged driver must not freeze the screen: the driver gets a deadline, /proc stays live.
  auto backend = make_watched_gpu_backend(g);
  if (!backend)
    return fail({"--driver-timeout: \"" + g.driver_timeout + "\" is not a positive duration",
                 "write it with a unit: 500ms, 5s, 1m"});
  auto collector = collect::Collector::open({g.proc_root, g.dev_root}, backend);
  if (!collector) return fail(collector.error());
  install_handlers();

  // Collections run on the engine's thread, every one a full scan; this loop only prints them.
  engine::Engine engine(std::move(*collector), std::make_unique<engine::BackendDriver>(backend),
                        engine::Cadence{*interval});
  engine.start();

  const bool tty = ::isatty(STDOUT_FILENO);
  auto style = output::Style::for_stdout(g.no_color);
  bool first = true;
  uint64_t shown = 0;
  while (!g_stop) {
    // Short waits, so a signal to stop is seen at once.
    auto collection = engine.newer_than(shown, std::chrono::milliseconds(50));
    if (!collection || g_stop) continue;
    shown = collection->sequence;
    const core::Snapshot& snapshot = *collection->snapshot;
    if (g.json) {
      std::cout << output::dump_json(output::snapshot_to_json(snapshot), -1) << "\n" << std::flush;
    } else {
      auto [width, height] = terminal_size();
      std::string text = style.paint("Every " + spec + ": gpureap ps", output::Color::Dim) + "   " +
                         output::terminal_safe(snapshot.hostname) + "   " +
                         clock_text(snapshot.timestamp) + "\n\n";
      if (!snapshot.complete())
        text += style.paint(
                    "view incomplete: " + std::to_string(snapshot.proc.uninspectable) +
                        " processes could not be inspected; run as root or grant CAP_SYS_PTRACE",
                    output::Color::Yellow) +
                "\n";
      text += output::render_ps(snapshot, style,
                                {o.tree, tty ? std::optional<size_t>(width) : std::nullopt});
      if (tty) {
        if (first) std::cout << tui::kHideCursor << tui::kClearScreen;
        std::cout << tui::repaint(text, width, height) << std::flush;
      } else {
        std::cout << text << "\n" << std::flush;
      }
    }
    first = false;
    if (!std::cout) break;  // the reader went away
  }
  if (tty && !g.json) std::cout << tui::kShowCursor << std::flush;
  // A collection blocked in the driver keeps a thread: leave without waiting for it.
  bool joined = engine.stop(std::chrono::milliseconds(500));
  if (!joined || backend->threads_stuck()) {
    std::fflush(nullptr);
    ::_exit(kExitOk);
  }
  return kExitOk;
}

}  // namespace gpureap::cli

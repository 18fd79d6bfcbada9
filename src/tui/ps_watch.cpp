#include "tui/ps_watch.h"

#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <ctime>
#include <iostream>

#include "engine/engine.h"
#include "output/ps_view.h"
#include "output/snapshot_json.h"
#include "output/style.h"
#include "output/view_incomplete.h"
#include "text/escape.h"
#include "text/time_format.h"
#include "tui/watch.h"

namespace gpureap::tui {
namespace {

volatile std::sig_atomic_t g_stop = 0;
void on_stop_signal(int) {
  g_stop = 1;
}

void install_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &sa, nullptr);
}

std::pair<size_t, size_t> terminal_size() {
  winsize ws{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0)
    return {ws.ws_col, ws.ws_row};
  return {80, 24};
}

// One screen: a title line (the interval, the host, the time), the incomplete view's warning,
// the ps table.
std::string screen(const core::Snapshot& snapshot, const PsWatchOptions& o,
                   const output::Style& style, std::optional<size_t> width) {
  std::string text = style.paint("Every " + o.every + ": gpureap ps", output::Color::Dim) + "   " +
                     text::terminal_safe(snapshot.hostname) + "   " +
                     text::local_date_time(snapshot.timestamp) + "\n\n";
  if (!snapshot.complete())
    text += style.paint(output::view_incomplete(snapshot), output::Color::Yellow) + "\n";
  return text + output::render_ps(snapshot, style,
                                  {o.tree, width, o.unicode, o.select.sort, o.compact,
                                   output::scope_words(o.select)});
}

}  // namespace

bool watch_ps(const collect::Collector& collector, const PsWatchOptions& o) {
  install_handlers();
  // Collections run on the engine's thread, every one a full scan; this loop only prints them.
  engine::Engine engine(collector, engine::Cadence{o.interval});
  engine.start();
  const bool tty = ::isatty(STDOUT_FILENO);
  auto style = output::Style::for_stdout(o.no_color);
  bool first = true;
  uint64_t shown = 0;
  while (!g_stop) {
    // Short waits, so a signal to stop is seen at once.
    auto collection = engine.newer_than(shown, std::chrono::milliseconds(50));
    if (!collection || g_stop) continue;
    shown = collection->sequence;
    const core::Snapshot snapshot = output::select_rows(*collection->snapshot, o.select);
    if (o.json) {
      std::cout << output::snapshot_text(snapshot, -1) << "\n" << std::flush;
    } else {
      auto [width, height] = terminal_size();
      std::string text =
          screen(snapshot, o, style, tty ? std::optional<size_t>(width) : std::nullopt);
      if (tty) {
        if (first) std::cout << kHideCursor << kClearScreen;
        std::cout << repaint(text, width, height) << std::flush;
      } else {
        std::cout << text << "\n" << std::flush;
      }
    }
    first = false;
    if (!std::cout) break;  // the reader went away
  }
  if (tty && !o.json) std::cout << kShowCursor << std::flush;
  return engine.stop(std::chrono::milliseconds(500));
}

}  // namespace gpureap::tui

#include "cli/announce.h"

#include <set>

#include "cli/daemon_client.h"
#include "reap/arguments.h"
#include "text/escape.h"

namespace gpureap::cli {

daemon::AnnounceRequest announcement(const std::string& by, const std::string& signal,
                                     const reap::Plan& plan) {
  daemon::AnnounceRequest a;
  a.by = by.substr(0, 256);
  a.signal = signal.substr(0, 16);
  a.reason = plan.selection.substr(0, 512);
  for (const auto& t : plan.targets) {
    if (t.action != reap::Action::Signal) continue;
    if (a.targets.size() == daemon::kMaxAnnouncedTargets) {
      ++a.more;
      continue;
    }
    daemon::AnnouncedTarget target{t.pid, t.start_ticks, t.comm.substr(0, 64), std::nullopt};
    if (!t.gpus.empty()) target.gpu = t.gpus.front().index;
    // A keeper's GPU is its ghost's.
    for (const auto& g : plan.gone)
      if (!target.gpu && !g.gpus.empty())
        for (pid_t k : g.keepers)
          if (k == t.pid) target.gpu = g.gpus.front().index;
    a.targets.push_back(std::move(target));
  }
  daemon::fit_announcement(a);
  return a;
}

bool announce(const daemon::AnnounceRequest& request) {
  std::string socket = daemon::default_local_socket();
  if (socket.empty()) return false;
  daemon::AnnounceRequest fitted = request;
  daemon::fit_announcement(fitted);
  return ask_daemon(socket, fitted, kAnnounceWithin).has_value();
}

bool announce_plan(const std::string& by, int signal, const reap::Plan& plan) {
  auto a = announcement(by, reap::signal_name(signal), plan);
  if (a.targets.empty()) return false;
  return announce(a);
}

std::string command_words(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : " ") + text::terminal_safe(w);
  return out;
}

}  // namespace gpureap::cli

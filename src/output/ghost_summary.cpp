#include "output/ghost_summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "doctor/reset_guard.h"
#include "doctor/reset_remedy.h"
#include "text/byte_format.h"

namespace gpureap::output {
namespace {

uint64_t bytes_on(const core::Snapshot& s, pid_t pid, unsigned gpu) {
  const auto* r = s.row(pid);
  if (!r) return 0;
  for (const auto& u : r->gpus)
    if (u.index == gpu) return u.used_bytes.value_or(0);
  return 0;
}

std::string pids_text(const std::vector<pid_t>& pids) {
  return fmt::format("{}", fmt::join(pids, " "));
}

}  // namespace

std::vector<GhostNotice> ghost_notices(const core::Snapshot& shown) {
  const core::Snapshot& s = shown.figures();
  std::vector<GhostNotice> out;
  // The GPUs shown (--gpu keeps only its own), with the whole GPU's figures.
  for (const auto& g : shown.drivers.gpus) {
    GhostNotice kept{g.index, GhostCase::Kept}, leaked{g.index, GhostCase::Leaked},
        unknown{g.index, GhostCase::Unknown}, served{g.index, GhostCase::Served};
    std::set<pid_t> keepers;
    for (const auto& ghost : s.ghosts) {
      if (std::find(ghost.gpus.begin(), ghost.gpus.end(), g.index) == ghost.gpus.end()) continue;
      auto& n = ghost.kept_by_server() ? served
                : ghost.kept()         ? kept
                : ghost.leaked         ? leaked
                                       : unknown;
      if (ghost.kept_by_server())
        for (pid_t server : ghost.servers)
          if (std::find(n.servers.begin(), n.servers.end(), server) == n.servers.end())
            n.servers.push_back(server);
      n.bytes += bytes_on(s, ghost.pid, g.index);
      n.gone.push_back(ghost.pid);
      keepers.insert(ghost.keepers.begin(), ghost.keepers.end());
      keepers.insert(ghost.listed_keepers.begin(), ghost.listed_keepers.end());
    }
    kept.keepers = keepers.size();
    if (!kept.gone.empty()) {
      kept.headline = fmt::format("{} on GPU {} is held by ghosts ({} process{} keep{} it alive).",
                                  text::human_bytes(kept.bytes), g.index, kept.keepers,
                                  kept.keepers == 1 ? "" : "es", kept.keepers == 1 ? "s" : "");
      kept.command = "gpureap kill " + pids_text(kept.gone);
      out.push_back(std::move(kept));
    }
    if (!leaked.gone.empty()) {
      leaked.headline = fmt::format(
          "{} on GPU {} is leaked: the driver lists gone PID{} {} and no "
          "process holds {}.",
          text::human_bytes(leaked.bytes), g.index, leaked.gone.size() == 1 ? "" : "s",
          pids_text(leaked.gone), leaked.gone.size() == 1 ? "it" : "them");
      // Doctor's reset remedy, from its code: the vendor's reset (or "reboot"), and what blocks it.
      leaked.command = doctor::reset_command(s, g.index);
      leaked.blocked = doctor::paused_reset_note(s, g.index).value_or("");
      out.push_back(std::move(leaked));
    }
    if (!served.gone.empty()) {
      std::string name = "a server";
      for (const auto& p : g.processes)
        if (p.pid == served.servers.front() && p.serves_clients) name = *p.serves_clients;
      served.headline = fmt::format(
          "{} on GPU {} is held for gone PID{} {} by {} PID {}, which still runs {} work.",
          text::human_bytes(served.bytes), g.index, served.gone.size() == 1 ? "" : "s",
          pids_text(served.gone), name, pids_text(served.servers),
          served.gone.size() == 1 ? "its" : "their");
      served.command = fmt::format("gpureap doctor --gpu {}", g.index);
      out.push_back(std::move(served));
    }
    if (!unknown.gone.empty()) {
      unknown.headline = fmt::format(
          "{} on GPU {} is listed for gone PID{} {}, and no holder was found "
          "among the processes gpureap could inspect.",
          text::human_bytes(unknown.bytes), g.index, unknown.gone.size() == 1 ? "" : "s",
          pids_text(unknown.gone));
      unknown.command = "sudo gpureap doctor";
      out.push_back(std::move(unknown));
    }
  }
  return out;
}

}  // namespace gpureap::output

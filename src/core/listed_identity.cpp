#include "core/listed_identity.h"

#include <algorithm>
#include <set>

namespace gpureap::core {
namespace {

// The GPU's files are known (its device numbers, or at least their major): holding none of
// them says something. Without them nothing can be told from the files.
bool files_known(const Gpu& g) {
  return !g.device_numbers.empty() || g.device_major.has_value();
}

bool live_server_on(const ProcView& proc, const Gpu& g, pid_t server) {
  const HostProcess* s = proc.find(server);
  if (!s || !s->is_live()) return false;
  return std::any_of(g.processes.begin(), g.processes.end(), [&](const DriverProcess& p) {
    return p.pid == server && p.serves_clients.has_value();
  });
}

// The process at the number holds a file of a GPU that lists `pid`, or is a client whose
// verified, live server is listed beside it (the server holds the files for its clients).
// `known`: some listing GPU's files are known, so the answer means something.
bool vouched_by_files(const ProcView& proc, const DriverReading& drivers, const HostProcess& p,
                      bool& known) {
  known = false;
  for (const auto& g : drivers.gpus) {
    for (const auto& listed : g.processes) {
      if (listed.pid != p.stat.pid) continue;
      if (!files_known(g)) continue;
      known = true;
      if (p.holds_gpu(g)) return true;
      if (listed.kind == GpuProcessKind::ServerClient) {
        if (listed.server && live_server_on(proc, g, *listed.server)) return true;
        if (!listed.server &&
            std::any_of(g.processes.begin(), g.processes.end(), [&](const DriverProcess& s) {
              return s.serves_clients && live_server_on(proc, g, s.pid);
            }))
          return true;
      }
    }
  }
  return false;
}

}  // namespace

ListedIdentities::ListedIdentities(const ProcView& proc, const DriverReading& drivers) {
  std::set<pid_t> listed;
  for (const auto& g : drivers.gpus)
    for (const auto& p : g.processes) listed.insert(p.pid);
  for (pid_t pid : listed) {
    const HostProcess* p = proc.find(pid);
    if (!p) continue;  // gone
    auto reuse = [&](ReusedPid::Why why) {
      ReusedPid r;
      r.why = why;
      r.comm = p->stat.comm;
      r.uid = p->details ? p->details->uid : std::nullopt;
      r.start_ticks = p->stat.start_ticks;
      reused_[pid] = std::move(r);
    };
    auto since = proc.listed_since.find(pid);
    auto first = proc.listed_first_process.find(pid);
    if ((since != proc.listed_since.end() && p->stat.start_ticks > since->second) ||
        (first != proc.listed_first_process.end() && p->stat.start_ticks != first->second)) {
      reuse(ReusedPid::Why::StartedAfterListing);
      continue;
    }
    // A zombie holds nothing any more: the listing is a gone one whoever's zombie it is (anyone
    // can leave one unreaped on a number), and no file can tell the listed process's apart.
    if (!p->is_live()) continue;
    // Another user's fd table, unreadable without privilege: nothing can be told, and the view
    // says it is incomplete. The number is taken at its word, as the driver gives it.
    if (!p->fds_readable) {
      owners_[pid] = p;
      continue;
    }
    bool known = false;
    if (vouched_by_files(proc, drivers, *p, known) || !known)
      owners_[pid] = p;
    else
      reuse(ReusedPid::Why::HoldsNoFile);
  }
}

const HostProcess* ListedIdentities::owner(pid_t pid) const {
  auto it = owners_.find(pid);
  return it == owners_.end() ? nullptr : it->second;
}

const ReusedPid* ListedIdentities::reused(pid_t pid) const {
  auto it = reused_.find(pid);
  return it == reused_.end() ? nullptr : &it->second;
}

std::string describe(const ReusedPid& r) {
  switch (r.why) {
    case ReusedPid::Why::HoldsNoFile:
      return "holds no device file of the GPUs that list it";
    case ReusedPid::Why::StartedAfterListing:
      return "started after the PID was first listed";
  }
  return {};
}

}  // namespace gpureap::core

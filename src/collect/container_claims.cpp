#include "collect/container_claims.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "procfs/cgroup_owner.h"
#include "procfs/container_names.h"

namespace gpureap::collect {
namespace {

using Verdict = procfs::CgroupOwnership::Verdict;

// What vouches for one container: read once per container and scan.
struct Evidence {
  procfs::CgroupOwnership owner;
  procfs::RuntimeRecord record;
  bool init_running = false;
  std::optional<core::ContainerInfo> init_claim;  // what the init's own cgroup says
};

// A process descends from `ancestor` (or is it), by the parents the scan read.
bool descends_from(const core::ProcView& view, pid_t pid, pid_t ancestor) {
  for (int hops = 0; hops < 4096 && pid > 0; ++hops) {
    if (pid == ancestor) return true;
    const auto* p = view.find(pid);
    if (!p || p->stat.ppid == pid) return false;
    pid = p->stat.ppid;
  }
  return false;
}

struct Decision {
  bool verified = false;
  std::string why;
};

Decision decide(const core::ProcView& view, pid_t pid, const core::ContainerInfo& c,
                const Evidence& e) {
  if (e.owner.verdict == Verdict::Delegated) return {false, e.owner.why};
  const auto& r = e.record;
  if (!r.runtime.empty()) {
    if (!r.init_pid) return {false, r.runtime + " records no running init for the container"};
    const std::string init = "PID " + std::to_string(*r.init_pid);
    if (!e.init_running)
      return {false, r.runtime + " names " + init + " as the container's init, and it is gone"};
    if (*r.init_pid == pid) return {true, r.runtime + " names it as the container's init"};
    if (descends_from(view, pid, *r.init_pid))
      return {true, r.runtime + " names " + init + ", its ancestor, as the container's init"};
    // A `docker exec`'s process descends from the runtime's shim, but joins the init's cgroup.
    if (e.init_claim && !c.cgroup.empty() && e.init_claim->cgroup == c.cgroup &&
        e.init_claim->hierarchy == c.hierarchy)
      return {true, "it runs in the cgroup of " + init + ", which " + r.runtime +
                        " names as the container's init"};
    return {false, r.runtime + " names " + init +
                       " as the container's init, and it is neither this process, nor its "
                       "ancestor, nor in its cgroup"};
  }
  if (e.owner.verdict == Verdict::RootOwned)
    return {true,
            "its cgroup and every one above it belong to root, outside any user's delegated "
            "subtree; no runtime state names it"};
  return {false, e.owner.why + "; no runtime state vouches for it"};
}

}  // namespace

void settle_container_claims(core::ProcView& view, const procfs::ProcFs& proc,
                             const std::string& cgroup_fs, const std::string& runtime_root) {
  using Key = std::tuple<std::string, std::string, std::string, std::optional<std::string>,
                         std::optional<std::string>>;
  auto undecided = [](const core::HostProcess& p) {
    return p.details && p.details->container && p.details->container->verification.empty();
  };
  // Most passes find every claim decided before: the list, which snapshots may share, is
  // then left as it is rather than copied to be edited.
  if (std::none_of(view.processes.begin(), view.processes.end(), undecided)) return;
  std::map<Key, Evidence> evidence;
  for (auto& p : view.processes.edit()) {
    if (!undecided(p)) continue;
    auto& c = *p.details->container;
    Key key{c.hierarchy, c.cgroup, c.runtime, c.id, c.pod_uid};
    auto it = evidence.find(key);
    if (it == evidence.end()) {
      Evidence e;
      e.owner = procfs::cgroup_ownership(cgroup_fs, c.hierarchy, c.cgroup);
      if (e.owner.verdict != Verdict::Delegated) {
        e.record = procfs::read_runtime_record(runtime_root, c);
        if (e.record.init_pid) {
          e.init_running = view.find(*e.record.init_pid) != nullptr;
          e.init_claim = proc.read_container(*e.record.init_pid);
        }
      }
      it = evidence.emplace(std::move(key), std::move(e)).first;
    }
    auto d = decide(view, p.stat.pid, c, it->second);
    c.verified = d.verified;
    c.verification = std::move(d.why);
    if (!c.verified) continue;
    const auto& n = it->second.record.names;
    c.name = n.name;
    c.pod_name = n.pod_name;
    c.pod_namespace = n.pod_namespace;
  }
}

}  // namespace gpureap::collect

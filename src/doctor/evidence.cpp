#include "doctor/evidence.h"

#include <fmt/format.h>

#include "text/byte_format.h"

namespace gpureap::doctor {

std::string process_label(const core::HostProcess& p) {
  return fmt::format("PID {} ({})", p.stat.pid, p.stat.comm);
}

std::string holds_sentence(const core::Snapshot& s, const core::HostProcess& p) {
  std::string files;
  for (const auto& d : p.devices) {
    std::string fds;
    for (int fd : d.fds) fds += (fds.empty() ? "" : ", ") + std::to_string(fd);
    files += fmt::format("{}{} on fd {}", files.empty() ? "" : ", ", d.path, fds);
  }
  std::string parent = std::to_string(p.stat.ppid);
  if (const auto* pp = s.find(p.stat.ppid)) parent += " (" + pp->stat.comm + ")";
  return fmt::format("{} holds {}; its parent is {}", process_label(p), files, parent);
}

std::optional<std::string> container_stop_command(const core::HostProcess& p) {
  // A claim its cgroup's name makes, unverified, may name someone else's container.
  const auto* verified = p.verified_container();
  if (!verified || !verified->id) return std::nullopt;
  const auto& c = *verified;
  const std::string id = c.id->substr(0, 12);
  // The id, never a name, goes into the command: it is what the runtime cannot confuse. The
  // names say what it stops.
  std::string what = "   # stops its container";
  if (c.pod_name)
    what = "   # stops container " + c.name.value_or(id) + " of pod " + c.display_name();
  else if (c.name)
    what = "   # stops container " + *c.name;
  if (c.runtime == "docker") return "docker stop " + id + what;
  if (c.runtime == "podman") return "podman stop " + id + what;
  if (c.runtime == "containerd" && !c.pod_uid) return "nerdctl stop " + id + what;
  return "crictl stop " + id + what;  // cri-o and containerd under Kubernetes
}

std::string bytes_text(std::optional<uint64_t> bytes) {
  return bytes ? text::human_bytes(*bytes) : std::string("an unknown amount");
}

std::string pid_list(const std::vector<pid_t>& pids) {
  std::string out;
  for (pid_t p : pids) out += (out.empty() ? "" : " ") + std::to_string(p);
  return out;
}

}  // namespace gpureap::doctor

// Container identity from /proc/PID/cgroup. Each runtime names its cgroups its own way:
//   docker      /docker/<id>                       (v1)   .../docker-<id>.scope        (systemd)
//   containerd  /<namespace>/<id> (cgroupfs)               .../cri-containerd-<id>.scope,
//   nerdctl-<id>.scope cri-o       .../crio-<id>  or  .../crio-<id>.scope podman
//   /libpod_parent/libpod-<id>          (v1)   .../libpod-<id>.scope kubernetes
//   .../kubepods[...]/pod<uid>/<id>  or  ...-pod<uid_with_underscores>.slice/...
#include <algorithm>
#include <cctype>
#include <set>
#include <string>

#include "procfs/parsers.h"

namespace gpureap::procfs {
namespace {

bool is_hex_id(std::string_view s) {
  return s.size() >= 12 && std::all_of(s.begin(), s.end(), [](unsigned char c) {
           return std::isdigit(c) || (c >= 'a' && c <= 'f');
         });
}

std::vector<std::string_view> components(std::string_view path) {
  std::vector<std::string_view> out;
  while (!path.empty()) {
    size_t slash = path.find('/');
    if (slash != 0) out.push_back(path.substr(0, slash));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return out;
}

struct Prefix {
  std::string_view text;
  const char* runtime;
};
// Longest first where one prefix starts another ("crio-conmon-" is the monitor, not a container).
constexpr Prefix kPrefixes[] = {
    {"cri-containerd-", "containerd"},
    {"containerd-", "containerd"},
    {"nerdctl-", "containerd"},
    {"crio-", "cri-o"},
    {"docker-", "docker"},
    {"libpod-", "podman"},
};

// "<prefix><id>[.scope]" → runtime and id.
std::optional<core::ContainerInfo> from_scope(std::string_view comp) {
  if (comp.ends_with(".scope")) comp.remove_suffix(6);
  if (comp.starts_with("crio-conmon-") || comp.starts_with("libpod-conmon-")) return std::nullopt;
  for (const auto& p : kPrefixes) {
    if (comp.starts_with(p.text) && is_hex_id(comp.substr(p.text.size())))
      return core::ContainerInfo{p.runtime, std::string(comp.substr(p.text.size())), std::nullopt};
  }
  return std::nullopt;
}

// "pod<uid>" (cgroupfs) or "kubepods-<qos>-pod<uid_with_underscores>.slice" (systemd).
std::optional<std::string> pod_uid(std::string_view comp) {
  if (comp.ends_with(".slice")) comp.remove_suffix(6);
  size_t pos = comp.rfind("pod");
  if (pos == std::string_view::npos || (pos != 0 && comp[pos - 1] != '-')) return std::nullopt;
  std::string uid(comp.substr(pos + 3));
  std::replace(uid.begin(), uid.end(), '_', '-');
  if (uid.size() < 8 || !std::all_of(uid.begin(), uid.end(),
                                     [](unsigned char c) { return std::isxdigit(c) || c == '-'; }))
    return std::nullopt;
  return uid;
}

// The path's first `count` components as a path from the hierarchy's root.
std::string leading(const std::vector<std::string_view>& comps, size_t count) {
  std::string out;
  for (size_t i = 0; i < count; ++i) out.append("/").append(comps[i]);
  return out;
}

std::optional<core::ContainerInfo> from_path(std::string_view path) {
  auto comps = components(path);
  std::optional<std::string> pod;
  size_t pod_at = 0;
  bool kubepods = false;
  std::optional<core::ContainerInfo> found;
  size_t found_at = 0;
  for (size_t i = 0; i < comps.size(); ++i) {
    std::string_view c = comps[i];
    if (c.starts_with("kubepods")) kubepods = true;
    if (kubepods && !pod && (pod = pod_uid(c))) pod_at = i;
    if (auto s = from_scope(c)) {
      found = s;
      found_at = i;
      continue;
    }
    if (is_hex_id(c) && c.size() == 64) {
      std::string_view parent = i > 0 ? comps[i - 1] : std::string_view{};
      const char* runtime = parent == "docker"          ? "docker"
                            : parent == "libpod_parent" ? "podman"
                            : kubepods                  ? "kubernetes"
                                                        : "containerd";
      // A bare id directly under the root is not a container namespace layout.
      if (i == 0 && !kubepods) continue;
      found = core::ContainerInfo{runtime, std::string(c), std::nullopt};
      found_at = i;
    }
  }
  if (!found && pod) {
    found = core::ContainerInfo{"kubernetes", std::nullopt, std::nullopt};
    found_at = pod_at;
  }
  if (!found) return std::nullopt;
  if (pod) found->pod_uid = pod;
  // The cgroup that names it; what lies below is the container's own business.
  found->cgroup = leading(comps, found_at + 1);
  return found;
}

}  // namespace

std::optional<core::ContainerInfo> parse_cgroup(std::string_view text) {
  std::optional<core::ContainerInfo> best;
  std::set<std::string_view> hierarchies;
  bool repeated = false;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    size_t c1 = line.find(':');
    size_t c2 = c1 == std::string_view::npos ? c1 : line.find(':', c1 + 1);
    if (c2 == std::string_view::npos) continue;
    repeated |= !hierarchies.insert(line.substr(0, c1)).second;
    auto info = from_path(line.substr(c2 + 1));
    if (info) info->hierarchy = std::string(line.substr(c1 + 1, c2 - c1 - 1));
    // Prefer a line that names both the container and its pod.
    if (info && (!best || (info->id && !best->id) || (info->pod_uid && !best->pod_uid)))
      best = info;
  }
  // The kernel lists each hierarchy once. A second line for one is part of a cgroup's name
  // with a newline in it (older kernels allowed one): the file then locates nothing.
  if (best && repeated) best->cgroup.clear();
  return best;
}

}  // namespace gpureap::procfs

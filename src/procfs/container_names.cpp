#include "procfs/container_names.h"

#include <dirent.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <vector>

#include "procfs/file_read.h"

namespace gpureap::procfs {
namespace {

using nlohmann::json;

// A runtime's state file is a few KiB; podman's containers.json lists every container.
constexpr size_t kStateLimit = 1u << 20;
constexpr size_t kListLimit = 16u << 20;

bool is_hex_id(const std::string& id) {
  return id.size() >= 12 && id.size() <= 128 &&
         std::all_of(id.begin(), id.end(),
                     [](unsigned char c) { return std::isdigit(c) || (c >= 'a' && c <= 'f'); });
}

std::string under(const std::string& root, const std::string& path) {
  if (root.empty() || root == "/") return "/" + path;
  return (root.back() == '/' ? root : root + "/") + path;
}

// The file as JSON; null when it is missing, unreadable, too large or not JSON.
json read_json(const std::string& path, size_t limit = kStateLimit) {
  auto f = read_file(path, limit);
  if (!f.ok() || f.truncated) return nullptr;
  return json::parse(f.data, nullptr, false);
}

std::optional<std::string> text_at(const json& object, const char* key) {
  if (!object.is_object()) return std::nullopt;
  auto it = object.find(key);
  if (it == object.end() || !it->is_string() || it->get<std::string>().empty()) return std::nullopt;
  return it->get<std::string>();
}

// The three Kubernetes keys of a label or annotation map, under the names one runtime uses.
void from_map(const json& map, const char* container, const char* pod, const char* ns,
              ContainerNames& out) {
  if (auto v = text_at(map, container)) out.name = v;
  if (auto v = text_at(map, pod)) out.pod_name = v;
  if (auto v = text_at(map, ns)) out.pod_namespace = v;
}

bool found(const ContainerNames& n) {
  return n.name || n.pod_name || n.pod_namespace;
}

ContainerNames docker(const std::string& root, const std::string& id) {
  ContainerNames n;
  auto doc = read_json(under(root, "var/lib/docker/containers/" + id + "/config.v2.json"));
  if (auto name = text_at(doc, "Name")) {
    std::string v = *name;
    if (v.starts_with('/')) v.erase(0, 1);  // docker keeps "/name"
    if (!v.empty()) n.name = v;
  }
  if (doc.is_object() && doc.contains("Config") && doc["Config"].is_object())
    if (auto labels = doc["Config"].find("Labels"); labels != doc["Config"].end())
      from_map(*labels, "io.kubernetes.container.name", "io.kubernetes.pod.name",
               "io.kubernetes.pod.namespace", n);
  return n;
}

json annotations(const json& spec) {
  if (!spec.is_object()) return nullptr;
  auto it = spec.find("annotations");
  return it == spec.end() ? json(nullptr) : *it;
}

// containerd keeps each task under its namespace (k8s.io for Kubernetes, moby for docker,
// default for nerdctl): every namespace directory is tried.
ContainerNames containerd(const std::string& root, const std::string& id) {
  ContainerNames n;
  const std::string tasks = under(root, "run/containerd/io.containerd.runtime.v2.task");
  DIR* dir = ::opendir(tasks.c_str());
  if (!dir) return n;
  std::vector<std::string> namespaces;
  while (dirent* e = ::readdir(dir)) {
    std::string ns = e->d_name;
    if (ns != "." && ns != "..") namespaces.push_back(ns);
  }
  ::closedir(dir);
  std::sort(namespaces.begin(), namespaces.end());
  for (const auto& ns : namespaces) {
    auto spec = read_json(tasks + "/" + ns + "/" + id + "/config.json");
    if (spec.is_null()) continue;
    from_map(annotations(spec), "io.kubernetes.cri.container-name",
             "io.kubernetes.cri.sandbox-name", "io.kubernetes.cri.sandbox-namespace", n);
    return n;
  }
  return n;
}

ContainerNames crio(const std::string& root, const std::string& id) {
  ContainerNames n;
  auto spec = read_json(
      under(root, "run/containers/storage/overlay-containers/" + id + "/userdata/config.json"));
  from_map(annotations(spec), "io.kubernetes.container.name", "io.kubernetes.pod.name",
           "io.kubernetes.pod.namespace", n);
  return n;
}

ContainerNames podman(const std::string& root, const std::string& id) {
  ContainerNames n;
  auto list = read_json(
      under(root, "var/lib/containers/storage/overlay-containers/containers.json"), kListLimit);
  if (!list.is_array()) return n;
  for (const auto& c : list) {
    if (text_at(c, "id") != id) continue;
    auto names = c.find("names");
    if (names != c.end() && names->is_array() && !names->empty() && names->front().is_string())
      n.name = names->front().get<std::string>();
    break;
  }
  return n;
}

ContainerNames by_runtime(const std::string& root, const core::ContainerInfo& c) {
  if (!c.id || !is_hex_id(*c.id)) return {};
  const std::string& id = *c.id;
  if (c.runtime == "docker") return docker(root, id);
  if (c.runtime == "containerd") return containerd(root, id);
  if (c.runtime == "cri-o") return crio(root, id);
  if (c.runtime == "podman") return podman(root, id);
  if (c.runtime == "kubernetes") {
    for (auto* read : {containerd, crio, docker})
      if (auto n = read(root, id); found(n)) return n;
  }
  return {};
}

// A pod UID as the cgroup path gives it (a UUID): nothing else becomes a path.
bool is_pod_uid(const std::string& uid) {
  return uid.size() >= 8 && uid.size() <= 64 &&
         std::all_of(uid.begin(), uid.end(), [](unsigned char c) {
           return std::isdigit(c) || (c >= 'a' && c <= 'f') || c == '-';
         });
}

// The kubelet's log directory of the pod, var/log/pods/<namespace>_<name>_<uid>: the kubelet
// creates it (root's, not the pod's to write), and neither a namespace nor a pod name may hold
// an underscore (DNS-1123), so the first and last one split it.
void from_pod_logs(const std::string& root, const std::string& uid, ContainerNames& n) {
  const std::string logs = under(root, "var/log/pods");
  DIR* dir = ::opendir(logs.c_str());
  if (!dir) return;
  const std::string suffix = "_" + uid;
  while (dirent* e = ::readdir(dir)) {
    std::string entry = e->d_name;
    if (entry.size() <= suffix.size() || !entry.ends_with(suffix)) continue;
    std::string rest = entry.substr(0, entry.size() - suffix.size());
    size_t split = rest.find('_');
    if (split == 0 || split == std::string::npos || split + 1 == rest.size()) continue;
    if (!n.pod_namespace) n.pod_namespace = rest.substr(0, split);
    if (!n.pod_name) n.pod_name = rest.substr(split + 1);
    break;
  }
  ::closedir(dir);
}

}  // namespace

ContainerNames read_container_names(const std::string& runtime_root, const core::ContainerInfo& c) {
  ContainerNames n = by_runtime(runtime_root, c);
  if (c.pod_uid && is_pod_uid(*c.pod_uid) && (!n.pod_name || !n.pod_namespace))
    from_pod_logs(runtime_root, *c.pod_uid, n);
  return n;
}

}  // namespace gpureap::procfs

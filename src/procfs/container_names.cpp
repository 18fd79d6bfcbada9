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

// A PID file's number ("1234\n"); empty unless it is a plausible PID other than init's.
std::optional<pid_t> pid_in(const std::string& path) {
  auto f = read_file(path, 64);
  if (!f.ok() || f.truncated) return std::nullopt;
  std::string text = f.data;
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  if (text.empty() || text.size() > 9 ||
      !std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); }))
    return std::nullopt;
  pid_t pid = std::stoi(text);
  return pid > 1 ? std::optional<pid_t>(pid) : std::nullopt;
}

RuntimeRecord docker(const std::string& root, const std::string& id) {
  RuntimeRecord r;
  auto doc = read_json(under(root, "var/lib/docker/containers/" + id + "/config.v2.json"));
  if (!doc.is_object()) return r;
  r.runtime = "docker";
  auto& n = r.names;
  if (auto name = text_at(doc, "Name")) {
    std::string v = *name;
    if (v.starts_with('/')) v.erase(0, 1);  // docker keeps "/name"
    if (!v.empty()) n.name = v;
  }
  if (doc.contains("Config") && doc["Config"].is_object())
    if (auto labels = doc["Config"].find("Labels"); labels != doc["Config"].end())
      from_map(*labels, "io.kubernetes.container.name", "io.kubernetes.pod.name",
               "io.kubernetes.pod.namespace", n);
  if (auto state = doc.find("State"); state != doc.end() && state->is_object()) {
    auto running = state->find("Running");
    auto pid = state->find("Pid");
    if (running != state->end() && running->is_boolean() && running->get<bool>() &&
        pid != state->end() && pid->is_number_integer() && pid->get<int64_t>() > 1 &&
        pid->get<int64_t>() < (int64_t{1} << 31))
      r.init_pid = static_cast<pid_t>(pid->get<int64_t>());
  }
  return r;
}

json annotations(const json& spec) {
  if (!spec.is_object()) return nullptr;
  auto it = spec.find("annotations");
  return it == spec.end() ? json(nullptr) : *it;
}

// containerd keeps each task under its namespace (k8s.io for Kubernetes, moby for docker,
// default for nerdctl): every namespace directory is tried.
RuntimeRecord containerd(const std::string& root, const std::string& id) {
  RuntimeRecord r;
  const std::string tasks = under(root, "run/containerd/io.containerd.runtime.v2.task");
  DIR* dir = ::opendir(tasks.c_str());
  if (!dir) return r;
  std::vector<std::string> namespaces;
  while (dirent* e = ::readdir(dir)) {
    std::string ns = e->d_name;
    if (ns != "." && ns != "..") namespaces.push_back(ns);
  }
  ::closedir(dir);
  std::sort(namespaces.begin(), namespaces.end());
  for (const auto& ns : namespaces) {
    const std::string task = tasks + "/" + ns + "/" + id;
    auto spec = read_json(task + "/config.json");
    if (spec.is_null()) continue;
    r.runtime = "containerd";
    from_map(annotations(spec), "io.kubernetes.cri.container-name",
             "io.kubernetes.cri.sandbox-name", "io.kubernetes.cri.sandbox-namespace", r.names);
    r.init_pid = pid_in(task + "/init.pid");
    return r;
  }
  return r;
}

// cri-o's and podman's run directory of a container (containers/storage's run root).
std::string userdata(const std::string& root, const std::string& id) {
  return under(root, "run/containers/storage/overlay-containers/" + id + "/userdata");
}

RuntimeRecord crio(const std::string& root, const std::string& id) {
  RuntimeRecord r;
  auto spec = read_json(userdata(root, id) + "/config.json");
  if (spec.is_null()) return r;
  r.runtime = "cri-o";
  from_map(annotations(spec), "io.kubernetes.container.name", "io.kubernetes.pod.name",
           "io.kubernetes.pod.namespace", r.names);
  r.init_pid = pid_in(userdata(root, id) + "/pidfile");
  return r;
}

RuntimeRecord podman(const std::string& root, const std::string& id) {
  RuntimeRecord r;
  auto list = read_json(
      under(root, "var/lib/containers/storage/overlay-containers/containers.json"), kListLimit);
  if (!list.is_array()) return r;
  for (const auto& c : list) {
    if (text_at(c, "id") != id) continue;
    r.runtime = "podman";
    auto names = c.find("names");
    if (names != c.end() && names->is_array() && !names->empty() && names->front().is_string())
      r.names.name = names->front().get<std::string>();
    r.init_pid = pid_in(userdata(root, id) + "/pidfile");
    break;
  }
  return r;
}

RuntimeRecord by_runtime(const std::string& root, const core::ContainerInfo& c) {
  if (!c.id || !is_hex_id(*c.id)) return {};
  const std::string& id = *c.id;
  if (c.runtime == "docker") return docker(root, id);
  if (c.runtime == "containerd") return containerd(root, id);
  if (c.runtime == "cri-o") return crio(root, id);
  if (c.runtime == "podman") return podman(root, id);
  if (c.runtime == "kubernetes") {
    for (auto* read : {containerd, crio, docker})
      if (auto r = read(root, id); !r.runtime.empty()) return r;
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

RuntimeRecord read_runtime_record(const std::string& runtime_root, const core::ContainerInfo& c) {
  RuntimeRecord r = by_runtime(runtime_root, c);
  if (c.pod_uid && is_pod_uid(*c.pod_uid) && (!r.names.pod_name || !r.names.pod_namespace))
    from_pod_logs(runtime_root, *c.pod_uid, r.names);
  return r;
}

ContainerNames read_container_names(const std::string& runtime_root, const core::ContainerInfo& c) {
  return read_runtime_record(runtime_root, c).names;
}

}  // namespace gpureap::procfs

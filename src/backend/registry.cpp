#include "backend/registry.h"

#include <algorithm>

#include "backend/drm/drm_backend.h"
#include "backend/nvml/nvml_entry.h"

namespace gpureap::backend {

const Registry& builtin_backends() {
  static const Registry registry{
      nvml::nvml_entry(),
      drm::amd_entry(),
      drm::intel_entry(),
  };
  return registry;
}

const BackendEntry* find_backend(std::string_view name, const Registry* registry) {
  const Registry& r = registry ? *registry : builtin_backends();
  auto it = std::find_if(r.begin(), r.end(), [&](const BackendEntry& e) { return e.name == name; });
  return it == r.end() ? nullptr : &*it;
}

procfs::DeviceNodes device_nodes(const Registry& registry) {
  procfs::DeviceNodes out;
  for (const auto& entry : registry)
    for (auto node : entry.device_nodes) {
      if (std::any_of(out.begin(), out.end(),
                      [&](const procfs::DeviceNode& n) { return n.kind == node.kind; }))
        continue;
      node.backend = entry.name;
      out.push_back(std::move(node));
    }
  return out;
}

std::vector<kernel::KernelLogParser> kernel_log_parsers(const Registry& registry) {
  std::vector<kernel::KernelLogParser> out;
  for (const auto& entry : registry)
    if (entry.kernel_log &&
        std::none_of(out.begin(), out.end(), [&](const kernel::KernelLogParser& p) {
          return p.kind == entry.kernel_log->kind;
        }))
      out.push_back(*entry.kernel_log);
  return out;
}

std::string kernel_kind_label(std::string_view kind, const Registry* registry) {
  for (const auto& entry : registry ? *registry : builtin_backends())
    if (entry.kernel_log && entry.kernel_log->kind == kind && !entry.kernel_log->label.empty())
      return entry.kernel_log->label;
  return std::string(kind);
}

std::vector<std::pair<std::string, WorkServer>> work_servers(const Registry& registry) {
  std::vector<std::pair<std::string, WorkServer>> out;
  for (const auto& entry : registry)
    if (entry.work_server) out.emplace_back(entry.name, *entry.work_server);
  return out;
}

std::vector<std::string> kernel_functions(const Registry& registry) {
  std::vector<std::string> out;
  for (const auto& entry : registry)
    for (const auto& f : entry.kernel_functions)
      if (std::find(out.begin(), out.end(), f) == out.end()) out.push_back(f);
  return out;
}

const BackendEntry* driver_waited_in(const std::optional<std::string>& wchan,
                                     const std::vector<std::string>& stack,
                                     const Registry* registry) {
  for (const auto& entry : registry ? *registry : builtin_backends())
    if (kernel::first_function_of(wchan, stack, entry.kernel_functions)) return &entry;
  return nullptr;
}

const WorkServer* work_server_of(std::string_view name, const Registry* registry) {
  const BackendEntry* entry = find_backend(name, registry);
  return entry && entry->work_server ? &*entry->work_server : nullptr;
}

std::string fill_client(std::string text, pid_t server, pid_t client) {
  for (const auto& [key, pid] : {std::pair<std::string_view, pid_t>{"{server}", server},
                                 std::pair<std::string_view, pid_t>{"{client}", client}}) {
    const std::string value = std::to_string(pid);
    for (auto at = text.find(key); at != std::string::npos; at = text.find(key, at + value.size()))
      text.replace(at, key.size(), value);
  }
  return text;
}

std::string fill_gpu(std::string text, unsigned gpu, std::optional<unsigned> minor) {
  auto replace = [&](std::string_view key, const std::string& value) {
    for (auto at = text.find(key); at != std::string::npos; at = text.find(key, at + value.size()))
      text.replace(at, key.size(), value);
  };
  if (text.find("{minor}") != std::string::npos) {
    if (!minor) return {};
    replace("{minor}", std::to_string(*minor));
  }
  replace("{gpu}", std::to_string(gpu));
  return text;
}

}  // namespace gpureap::backend

#include "backend/drm/kfd.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <climits>
#include <string_view>

#include "backend/drm/sysfs_read.h"

namespace gpureap::backend::drm {
namespace {

constexpr uint64_t kMaxGpuId = UINT32_MAX;
constexpr uint64_t kMaxLocationId = 0xffff;  // PCI_DEVID: bus << 8 | devfn

// The value of `key` in a topology properties file (lines of "key value"); empty when the
// key is absent or its value is not a decimal number (`malformed` says which).
std::optional<uint64_t> property(std::string_view text, std::string_view key, bool& malformed) {
  while (!text.empty()) {
    size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);
    if (!line.starts_with(key) || line.size() <= key.size() || line[key.size()] != ' ') continue;
    std::string_view value = line.substr(key.size() + 1);
    uint64_t v = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    malformed = ec != std::errc{} || end != value.data() + value.size();
    return malformed ? std::nullopt : std::optional<uint64_t>(v);
  }
  return std::nullopt;
}

// KFD gives a GPU's PCI location as a PCI domain and location_id, which is the bus and devfn
// of the kernel's PCI_DEVID.
std::optional<std::string> node_pci_address(const std::string& node_dir, AttributeReader& r) {
  const std::string path = node_dir + "/properties";
  auto text = r.text(path);
  if (!text) return std::nullopt;
  bool bad_domain = false, bad_location = false;
  auto domain = property(*text, "domain", bad_domain);
  auto location = property(*text, "location_id", bad_location);
  if (bad_domain || bad_location || (location && *location > kMaxLocationId)) {
    r.warn(path, bad_domain ? "domain is not a number" : "location_id is not a PCI location");
    return std::nullopt;
  }
  if (!location) {
    r.warn(path, "no location_id");
    return std::nullopt;
  }
  // Kernels older than the domain property print none; read as domain 0, where almost every
  // GPU is.
  return fmt::format("{:04x}:{:02x}:{:02x}.{:x}", domain.value_or(0), *location >> 8,
                     (*location >> 3) & 0x1f, *location & 7);
}

std::optional<KfdNode> read_node(const std::string& node_dir, AttributeReader& r) {
  const std::string path = node_dir + "/gpu_id";
  auto gpu_id = r.decimal(path);
  if (!gpu_id || *gpu_id == 0) return std::nullopt;  // 0: a CPU node
  if (*gpu_id > kMaxGpuId) {
    r.warn(path, "not a 32-bit gpu_id: " + std::to_string(*gpu_id));
    return std::nullopt;
  }
  return KfdNode{static_cast<unsigned>(*gpu_id), node_pci_address(node_dir, r)};
}

std::vector<KfdNode> read_nodes(const std::string& nodes_dir, AttributeReader& r) {
  std::vector<KfdNode> nodes;
  for (const auto& name : list_dir(nodes_dir))
    if (number_suffix(name, ""))
      if (auto node = read_node(child(nodes_dir, name), r)) nodes.push_back(std::move(*node));
  std::sort(nodes.begin(), nodes.end(),
            [](const KfdNode& a, const KfdNode& b) { return a.gpu_id < b.gpu_id; });
  return nodes;
}

// vram_<gpu_id> files; the others (pasid, queues/, sdma_*, stats_*) are not memory.
KfdProcess read_process(pid_t pid, const std::string& dir, AttributeReader& r) {
  KfdProcess p{pid, {}};
  for (const auto& name : list_dir(dir)) {
    auto gpu_id = number_suffix(name, "vram_");
    if (!gpu_id) continue;
    if (auto bytes = r.decimal(child(dir, name))) p.vram.emplace_back(*gpu_id, *bytes);
  }
  std::sort(p.vram.begin(), p.vram.end());
  return p;
}

// Every process KFD has a context for, even one whose VRAM could not be read: the context
// itself holds the GPU.
std::vector<KfdProcess> read_processes(const std::string& proc_dir, AttributeReader& r) {
  std::vector<KfdProcess> processes;
  for (const auto& name : list_dir(proc_dir)) {
    auto pid = number_suffix(name, "");
    if (!pid || *pid == 0 || *pid > static_cast<unsigned>(INT_MAX)) continue;
    processes.push_back(read_process(static_cast<pid_t>(*pid), child(proc_dir, name), r));
  }
  std::sort(processes.begin(), processes.end(),
            [](const KfdProcess& a, const KfdProcess& b) { return a.pid < b.pid; });
  return processes;
}

}  // namespace

KfdReading read_kfd(const std::string& sys_root) {
  KfdReading out;
  const std::string dir = sys_root + "/class/kfd/kfd";
  if (!is_dir(dir)) return out;
  out.present = true;
  AttributeReader r(out.warnings);
  out.device = r.device_number(dir + "/dev");
  out.nodes = read_nodes(dir + "/topology/nodes", r);
  out.processes = read_processes(dir + "/proc", r);
  return out;
}

}  // namespace gpureap::backend::drm

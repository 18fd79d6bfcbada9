#include "backend/drm/gpu_processes.h"

#include <algorithm>
#include <map>

namespace gpureap::backend::drm {
namespace {

std::optional<uint64_t> figure(const RegionMemory& r) {
  return r.resident ? r.resident : r.total;
}

void add_to(std::optional<uint64_t>& sum, std::optional<uint64_t> v) {
  if (v) sum = sum.value_or(0) + *v;
}

void add_regions(std::vector<core::MemoryRegionUse>& into, const DrmClient& client) {
  for (const auto& r : client.regions) {
    auto it = std::find_if(into.begin(), into.end(),
                           [&](const core::MemoryRegionUse& u) { return u.name == r.name; });
    if (it == into.end()) {
      into.push_back({r.name, is_device_local(r.name), {}, {}, {}});
      it = std::prev(into.end());
    }
    add_to(it->total_bytes, r.total);
    add_to(it->resident_bytes, r.resident);
    add_to(it->shared_bytes, r.shared);
  }
}

void add_unique(std::vector<pid_t>& v, pid_t pid) {
  if (std::find(v.begin(), v.end(), pid) == v.end()) v.push_back(pid);
}

}  // namespace

bool client_of(const ObservedClient& client, const DrmDevice& device) {
  if (client.info.pdev) return *client.info.pdev == device.pci_address;
  const auto& numbers = device.device_numbers;
  return std::find(numbers.begin(), numbers.end(), client.node) != numbers.end();
}

// The regions whose memory is the GPU's: its own (vram, local0), or every region on a GPU
// with none.
bool counted(const DrmClient& client, const RegionMemory& r) {
  bool has_local = std::any_of(client.regions.begin(), client.regions.end(),
                               [](const RegionMemory& m) { return is_device_local(m.name); });
  return !has_local || is_device_local(r.name);
}

std::optional<uint64_t> client_used_bytes(const DrmClient& client) {
  std::optional<uint64_t> used;
  for (const auto& r : client.regions)
    if (counted(client, r)) add_to(used, figure(r));
  return used;
}

std::optional<uint64_t> client_shared_bytes(const DrmClient& client) {
  std::optional<uint64_t> shared;
  for (const auto& r : client.regions)
    if (counted(client, r) && r.shared && figure(r))
      add_to(shared, std::min(*r.shared, *figure(r)));
  return shared;
}

std::vector<core::DriverProcess> gpu_processes(const DrmDevice& device,
                                               const std::vector<ObservedClient>& clients,
                                               const KfdReading& kfd,
                                               std::optional<unsigned> kfd_gpu_id) {
  struct Part {
    const ObservedClient* client;
    std::optional<uint64_t> used, shared;
  };
  std::vector<Part> parts;
  const Part* counts_shared = nullptr;  // the client whose used memory keeps its shared part
  for (const auto& client : clients)
    if (client_of(client, device))
      parts.push_back({&client, client_used_bytes(client.info), client_shared_bytes(client.info)});
  for (const auto& part : parts) {
    if (part.shared.value_or(0) == 0) continue;
    if (!counts_shared || *part.shared > *counts_shared->shared ||
        (*part.shared == *counts_shared->shared &&
         part.client->first_pid() < counts_shared->client->first_pid()))
      counts_shared = &part;
  }
  std::map<pid_t, core::DriverProcess> by_pid;
  for (const auto& part : parts) {
    const auto& client = *part.client;
    auto& p = by_pid[client.first_pid()];
    p.pid = client.first_pid();
    // DRM does not say whether a client renders or computes.
    p.kind = core::GpuProcessKind::Graphics;
    auto used = part.used;
    if (used && part.shared && &part != counts_shared) *used -= *part.shared;  // shared <= used
    add_to(p.used_bytes, used);
    add_regions(p.regions, client.info);
    for (const auto& ref : client.fds)
      if (ref.pid != p.pid) add_unique(p.sharers, ref.pid);
  }
  if (kfd_gpu_id) {
    for (const auto& k : kfd.processes) {
      for (const auto& [gpu_id, bytes] : k.vram) {
        if (gpu_id != *kfd_gpu_id) continue;
        auto& p = by_pid[k.pid];
        p.pid = k.pid;
        p.kind = core::GpuProcessKind::Compute;
        // ROCm allocates through the render node's VM, so its render client may account the
        // same VRAM: the larger figure, never the sum.
        p.used_bytes = std::max(p.used_bytes.value_or(0), bytes);
      }
    }
  }
  std::vector<core::DriverProcess> out;
  out.reserve(by_pid.size());
  for (auto& [pid, p] : by_pid) {
    std::sort(p.sharers.begin(), p.sharers.end());
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace gpureap::backend::drm

#include "backend/nvml/mig_devices.h"

#include <sys/sysmacros.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "backend/nvml/mig_capabilities.h"
#include "procfs/parsers.h"

namespace gpureap::backend::nvml {
namespace {

// More MIG devices than any GPU has (7 GPU instances, at most 8 compute instances in all): a
// count beyond this is garbage, not a reason to make that many calls.
constexpr unsigned kMaxMigDevices = 64;

std::optional<unsigned> mig_unsigned(const SymbolTable& api, Fn fn, nvmlDevice_t device) {
  if (!api.has(fn)) return std::nullopt;
  unsigned value = 0;
  if (api.get<nvmlDeviceGetUnsigned_fn>(fn)(device, &value) != NVML_SUCCESS) return std::nullopt;
  return value;
}

std::optional<std::string> mig_string(const SymbolTable& api, Fn fn, nvmlDevice_t device) {
  if (!api.has(fn)) return std::nullopt;
  std::array<char, NVML_DEVICE_UUID_V2_BUFFER_SIZE> text{};
  if (api.get<nvmlDeviceGetString_fn>(fn)(device, text.data(),
                                          static_cast<unsigned>(text.size())) != NVML_SUCCESS)
    return std::nullopt;
  std::string value(text.data(), strnlen(text.data(), text.size()));
  if (value.empty()) return std::nullopt;
  return value;
}

core::GpuMemory mig_memory(const SymbolTable& api, nvmlDevice_t device) {
  core::GpuMemory memory;
  if (!api.has(Fn::MemoryInfo)) return memory;
  if (api.version(Fn::MemoryInfo) >= 2) {
    nvmlMemory_v2_t info{};
    info.version = nvmlMemory_v2;
    if (api.get<nvmlDeviceGetMemoryInfo_v2_fn>(Fn::MemoryInfo)(device, &info) == NVML_SUCCESS)
      memory = {info.total, info.used, info.free, info.reserved};
    return memory;
  }
  nvmlMemory_t info{};
  if (api.get<nvmlDeviceGetMemoryInfo_fn>(Fn::MemoryInfo)(device, &info) == NVML_SUCCESS)
    memory = {info.total, info.used, info.free, std::nullopt};
  return memory;
}

std::optional<unsigned> mig_caps_major(const std::string& proc_root) {
  std::ifstream in(proc_root + "/devices");
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  return procfs::parse_char_major(text.str(), "nvidia-caps");
}

}  // namespace

void attach_mig_capabilities(std::vector<core::Gpu>& gpus, const std::string& proc_root) {
  const bool any = std::any_of(gpus.begin(), gpus.end(), [](const core::Gpu& g) {
    return !g.instances.empty() && g.minor.has_value();
  });
  if (!any) return;
  const auto major = mig_caps_major(proc_root);
  if (!major) return;
  const auto capabilities = read_mig_capabilities(proc_root);
  for (auto& gpu : gpus) {
    if (!gpu.minor) continue;
    for (auto& instance : gpu.instances) {
      for (const MigCapability& cap : capabilities) {
        if (cap.gpu_minor != *gpu.minor || cap.gpu_instance != instance.gpu_instance_id) continue;
        if (cap.compute_instance && cap.compute_instance != instance.compute_instance_id) continue;
        instance.device_numbers.push_back(::makedev(*major, cap.device_minor));
      }
    }
  }
}

std::optional<std::string> mig_profile(const std::string& name) {
  const auto at = name.rfind("MIG ");
  if (at == std::string::npos || at + 4 >= name.size()) return std::nullopt;
  return name.substr(at + 4);
}

std::vector<MigDevice> read_mig_devices(const SymbolTable& api, nvmlDevice_t parent) {
  std::vector<MigDevice> devices;
  if (!api.has(Fn::MaxMigDeviceCount) || !api.has(Fn::MigDeviceHandleByIndex) ||
      !api.has(Fn::GpuInstanceId))
    return devices;
  const auto count = mig_unsigned(api, Fn::MaxMigDeviceCount, parent);
  if (!count) return devices;
  auto get_handle = api.get<nvmlDeviceGetMigDeviceHandleByIndex_fn>(Fn::MigDeviceHandleByIndex);
  for (unsigned i = 0; i < std::min(*count, kMaxMigDevices); ++i) {
    nvmlDevice_t handle = nullptr;
    if (get_handle(parent, i, &handle) != NVML_SUCCESS || handle == nullptr) continue;
    MigDevice device;
    device.handle = handle;
    const auto gi = mig_unsigned(api, Fn::GpuInstanceId, handle);
    if (!gi) continue;
    device.instance.gpu_instance_id = *gi;
    device.instance.kind = "MIG";
    device.instance.compute_instance_id = mig_unsigned(api, Fn::ComputeInstanceId, handle);
    if (auto name = mig_string(api, Fn::Name, handle)) device.instance.profile = mig_profile(*name);
    device.instance.uuid = mig_string(api, Fn::Uuid, handle);
    device.instance.memory = mig_memory(api, handle);
    devices.push_back(std::move(device));
  }
  return devices;
}

}  // namespace gpureap::backend::nvml

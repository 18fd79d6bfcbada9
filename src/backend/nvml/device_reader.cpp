#include "backend/nvml/device_reader.h"

#include <sys/sysmacros.h>

#include <array>
#include <cstring>
#include <future>
#include <optional>
#include <string>
#include <system_error>

#include "backend/nvml/abi.h"
#include "backend/nvml/device_major.h"
#include "backend/nvml/errors.h"
#include "backend/nvml/mig_devices.h"
#include "backend/nvml/process_lists.h"
#include "base/phase_timer.h"

namespace gpureap::backend::nvml {
namespace {

// Tracks the calls on one GPU handle: the first real failure becomes Gpu::error, and after
// GPU_IS_LOST nothing more is asked (every further call would fail the same way, slowly).
class GpuCalls {
 public:
  GpuCalls(const SymbolTable& api, core::Gpu& gpu) : api_(api), gpu_(gpu) {}

  bool lost() const { return lost_; }

  // True when `rc` is success; otherwise records why and leaves the metric unknown.
  bool ok(nvmlReturn_t rc, Fn fn) {
    if (rc == NVML_SUCCESS) return true;
    if (is_metric_unavailable(rc)) return false;
    if (rc == NVML_ERROR_GPU_IS_LOST) lost_ = true;
    if (!gpu_.error || rc == NVML_ERROR_GPU_IS_LOST) {
      gpu_.error = gpu_error(gpu_.index, rc, api_.name(fn), nvml_error_text(api_, rc)).text();
    }
    return false;
  }

  // Whether `fn` may be called: the library has it and the GPU is still there.
  bool can_call(Fn fn) const { return !lost_ && api_.has(fn); }

 private:
  const SymbolTable& api_;
  core::Gpu& gpu_;
  bool lost_ = false;
};

template <std::size_t N>
std::optional<std::string> to_string(const std::array<char, N>& text) {
  const std::string value(text.data(), strnlen(text.data(), N));
  if (value.empty()) return std::nullopt;
  return value;
}

std::optional<std::string> read_string(const SymbolTable& api, GpuCalls& calls, Fn fn,
                                       nvmlDevice_t device) {
  if (!calls.can_call(fn)) return std::nullopt;
  std::array<char, NVML_DEVICE_UUID_V2_BUFFER_SIZE> text{};
  auto get = api.get<nvmlDeviceGetString_fn>(fn);
  if (!calls.ok(get(device, text.data(), static_cast<unsigned>(text.size())), fn)) {
    return std::nullopt;
  }
  return to_string(text);
}

std::optional<unsigned> read_unsigned(const SymbolTable& api, GpuCalls& calls, Fn fn,
                                      nvmlDevice_t device) {
  if (!calls.can_call(fn)) return std::nullopt;
  unsigned value = 0;
  if (!calls.ok(api.get<nvmlDeviceGetUnsigned_fn>(fn)(device, &value), fn)) return std::nullopt;
  return value;
}

std::optional<std::string> read_pci_bus_id(const SymbolTable& api, GpuCalls& calls,
                                           nvmlDevice_t device) {
  if (!calls.can_call(Fn::PciInfo)) return std::nullopt;
  nvmlPciInfo_t pci{};
  if (!calls.ok(api.get<nvmlDeviceGetPciInfo_fn>(Fn::PciInfo)(device, &pci), Fn::PciInfo)) {
    return std::nullopt;
  }
  // The v1 struct has only the 16-byte id, at the offset of busIdLegacy.
  if (api.version(Fn::PciInfo) == 1) return to_string(std::to_array(pci.busIdLegacy));
  return to_string(std::to_array(pci.busId));
}

core::GpuMemory read_memory(const SymbolTable& api, GpuCalls& calls, nvmlDevice_t device) {
  core::GpuMemory memory;
  if (!calls.can_call(Fn::MemoryInfo)) return memory;
  if (api.version(Fn::MemoryInfo) >= 2) {
    nvmlMemory_v2_t info{};
    info.version = nvmlMemory_v2;
    if (calls.ok(api.get<nvmlDeviceGetMemoryInfo_v2_fn>(Fn::MemoryInfo)(device, &info),
                 Fn::MemoryInfo)) {
      memory = {info.total, info.used, info.free, info.reserved};
    }
    return memory;
  }
  // v1 has no separate reserved figure; its `used` already includes it.
  nvmlMemory_t info{};
  if (calls.ok(api.get<nvmlDeviceGetMemoryInfo_fn>(Fn::MemoryInfo)(device, &info),
               Fn::MemoryInfo)) {
    memory = {info.total, info.used, info.free, std::nullopt};
  }
  return memory;
}

void read_utilization(const SymbolTable& api, GpuCalls& calls, nvmlDevice_t device,
                      core::Gpu& gpu) {
  if (!calls.can_call(Fn::UtilizationRates)) return;
  nvmlUtilization_t util{};
  auto get = api.get<nvmlDeviceGetUtilizationRates_fn>(Fn::UtilizationRates);
  if (calls.ok(get(device, &util), Fn::UtilizationRates)) {
    gpu.utilization_percent = util.gpu;
    gpu.memory_utilization_percent = util.memory;
  }
}

std::optional<unsigned> read_temperature(const SymbolTable& api, GpuCalls& calls,
                                         nvmlDevice_t device) {
  if (!calls.can_call(Fn::Temperature)) return std::nullopt;
  unsigned celsius = 0;
  auto get = api.get<nvmlDeviceGetTemperature_fn>(Fn::Temperature);
  if (!calls.ok(get(device, NVML_TEMPERATURE_GPU, &celsius), Fn::Temperature)) {
    return std::nullopt;
  }
  return celsius;
}

std::optional<bool> read_mig_mode(const SymbolTable& api, GpuCalls& calls, nvmlDevice_t device) {
  if (!calls.can_call(Fn::MigMode)) return std::nullopt;
  unsigned current = 0;
  unsigned pending = 0;
  auto get = api.get<nvmlDeviceGetMigMode_fn>(Fn::MigMode);
  if (!calls.ok(get(device, &current, &pending), Fn::MigMode)) return std::nullopt;
  return current != 0;
}

void apply(const StaticFacts& facts, core::Gpu& gpu) {
  gpu.name = facts.name;
  gpu.uuid = facts.uuid;
  gpu.minor = facts.minor;
  gpu.pci_bus_id = facts.pci_bus_id;
}

// The lists of each MIG device, for when the parent's aggregate lists are refused. A record
// without instance ids gets its MIG device's.
ProcessLists read_instance_lists(const SymbolTable& api, const std::vector<MigDevice>& mig,
                                 unsigned index, std::uint64_t pid_max) {
  ProcessLists all;
  for (const MigDevice& device : mig) {
    const RecordLimits limits{pid_max, device.instance.memory.total_bytes};
    ProcessLists lists = read_process_lists(api, device.handle, index, limits);
    if (lists.gpu_error) return lists;
    if (lists.processes_error && !all.processes_error)
      all.processes_error = "MIG instance " + std::to_string(device.instance.gpu_instance_id) +
                            ": " + *lists.processes_error;
    all.refused = all.refused || lists.refused;
    if (!all.record_layout) all.record_layout = lists.record_layout;
    for (auto& process : lists.processes) {
      if (!process.gpu_instance_id) {
        process.gpu_instance_id = device.instance.gpu_instance_id;
        process.compute_instance_id = device.instance.compute_instance_id;
      }
      merge_process(all.processes, std::move(process));
    }
  }
  return all;
}

}  // namespace

core::Gpu read_gpu(const SymbolTable& api, unsigned index, std::uint64_t pid_max,
                   std::optional<StaticFacts>& known) {
  core::Gpu gpu;
  gpu.index = index;
  GpuCalls calls(api, gpu);
  std::optional<base::Phase> phase(std::in_place, "nvml gpu " + std::to_string(index) + " queries");

  nvmlDevice_t device = nullptr;
  auto get_handle = api.get<nvmlDeviceGetHandleByIndex_fn>(Fn::DeviceGetHandleByIndex);
  if (nvmlReturn_t rc = get_handle(index, &device); rc != NVML_SUCCESS) {
    // Without a handle nothing about this GPU can be read, whatever the code.
    gpu.error =
        gpu_error(index, rc, api.name(Fn::DeviceGetHandleByIndex), nvml_error_text(api, rc)).text();
    return gpu;
  }

  if (!known || known->handle != device) {
    StaticFacts facts{device, read_string(api, calls, Fn::Name, device),
                      read_string(api, calls, Fn::Uuid, device),
                      read_unsigned(api, calls, Fn::MinorNumber, device),
                      read_pci_bus_id(api, calls, device)};
    const bool complete = facts.name && facts.uuid && facts.minor && facts.pci_bus_id;
    known = complete ? std::optional(facts) : std::nullopt;
    apply(facts, gpu);
  } else {
    apply(*known, gpu);
  }
  // /dev/nvidia<minor> reaches this GPU; without the minor, any /dev/nvidia<N> may.
  if (gpu.minor)
    gpu.device_numbers.push_back(::makedev(kNvidiaDeviceMajor, *gpu.minor));
  else
    gpu.device_major = kNvidiaDeviceMajor;
  gpu.memory = read_memory(api, calls, device);
  // The per-process utilisation samples, the slowest call of a GPU's (it walks the driver's
  // context table), need nothing but the handle: asked beside the calls that follow (NVML is
  // thread-safe), and waited for when the lists are joined with them.
  std::future<SmUtilization> samples;
  if (!calls.lost() && api.has(Fn::ProcessUtilization)) try {
      samples = std::async(std::launch::async,
                           [&api, device] { return read_sm_utilization(api, device); });
    } catch (const std::system_error&) {
      // No thread to be had: read_process_lists asks for them in turn.
    }
  read_utilization(api, calls, device, gpu);
  gpu.temperature_celsius = read_temperature(api, calls, device);
  if (auto milliwatts = read_unsigned(api, calls, Fn::PowerUsage, device)) {
    gpu.power_watts = *milliwatts / 1000.0;
  }
  gpu.split_mode = read_mig_mode(api, calls, device);
  if (calls.lost()) return gpu;
  std::vector<MigDevice> mig;
  if (gpu.split_mode.value_or(false)) mig = read_mig_devices(api, device);
  for (const MigDevice& m : mig) gpu.instances.push_back(m.instance);

  phase.emplace("nvml gpu " + std::to_string(index) + " process lists");
  const RecordLimits limits{pid_max, gpu.memory.total_bytes};
  std::function<SmUtilization()> utilization;
  if (samples.valid()) utilization = [&samples] { return samples.get(); };
  ProcessLists lists = read_process_lists(api, device, index, limits, utilization);
  if (lists.refused && !mig.empty()) lists = read_instance_lists(api, mig, index, pid_max);
  if (lists.gpu_error) {
    gpu.error = lists.gpu_error->text();
    return gpu;
  }
  gpu.processes = std::move(lists.processes);
  gpu.processes_error = std::move(lists.processes_error);
  if (lists.record_layout) gpu.details.emplace_back("process_record_layout", *lists.record_layout);
  return gpu;
}

}  // namespace gpureap::backend::nvml

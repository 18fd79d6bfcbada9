#include "backend/nvml/symbol_table.h"

#include <algorithm>
#include <string>

namespace gpureap::backend::nvml {
namespace {

constexpr bool kRequired = true;
constexpr bool kOptional = false;

// Required: without these no GPU can even be enumerated. Everything else degrades to an
// unknown metric, so an old or stripped-down NVML still shows what it can.
constexpr std::array<SymbolSpec, kFnCount> kSpecs = {{
    {Fn::Init, kRequired, "initialisation", {{{"nvmlInit_v2", 2}, {"nvmlInit", 1}}}},
    {Fn::Shutdown, kRequired, "shutdown", {{{"nvmlShutdown", 1}}}},
    {Fn::ErrorString, kOptional, "NVML's own error texts", {{{"nvmlErrorString", 1}}}},
    {Fn::DeviceGetCount,
     kRequired,
     "GPU enumeration",
     {{{"nvmlDeviceGetCount_v2", 2}, {"nvmlDeviceGetCount", 1}}}},
    {Fn::DeviceGetHandleByIndex,
     kRequired,
     "GPU enumeration",
     {{{"nvmlDeviceGetHandleByIndex_v2", 2}, {"nvmlDeviceGetHandleByIndex", 1}}}},
    {Fn::ComputeRunningProcesses,
     kOptional,
     "compute process lists",
     {{{"nvmlDeviceGetComputeRunningProcesses_v3", 3},
       {"nvmlDeviceGetComputeRunningProcesses_v2", 2},
       {"nvmlDeviceGetComputeRunningProcesses", 1}}}},
    {Fn::GraphicsRunningProcesses,
     kOptional,
     "graphics process lists",
     {{{"nvmlDeviceGetGraphicsRunningProcesses_v3", 3},
       {"nvmlDeviceGetGraphicsRunningProcesses_v2", 2},
       {"nvmlDeviceGetGraphicsRunningProcesses", 1}}}},
    {Fn::MpsComputeRunningProcesses,
     kOptional,
     "MPS client process lists",
     {{{"nvmlDeviceGetMPSComputeRunningProcesses_v3", 3},
       {"nvmlDeviceGetMPSComputeRunningProcesses_v2", 2},
       {"nvmlDeviceGetMPSComputeRunningProcesses", 1}}}},
    {Fn::MemoryInfo,
     kOptional,
     "GPU memory totals",
     {{{"nvmlDeviceGetMemoryInfo_v2", 2}, {"nvmlDeviceGetMemoryInfo", 1}}}},
    {Fn::PciInfo,
     kOptional,
     "PCI bus ids",
     {{{"nvmlDeviceGetPciInfo_v3", 3},
       {"nvmlDeviceGetPciInfo_v2", 2},
       {"nvmlDeviceGetPciInfo", 1}}}},
    {Fn::Name, kOptional, "GPU names", {{{"nvmlDeviceGetName", 1}}}},
    {Fn::Uuid, kOptional, "GPU UUIDs", {{{"nvmlDeviceGetUUID", 1}}}},
    {Fn::MinorNumber,
     kOptional,
     "the GPU to /dev/nvidia<minor> mapping",
     {{{"nvmlDeviceGetMinorNumber", 1}}}},
    {Fn::UtilizationRates, kOptional, "GPU utilisation", {{{"nvmlDeviceGetUtilizationRates", 1}}}},
    {Fn::Temperature, kOptional, "GPU temperature", {{{"nvmlDeviceGetTemperature", 1}}}},
    {Fn::PowerUsage, kOptional, "GPU power draw", {{{"nvmlDeviceGetPowerUsage", 1}}}},
    {Fn::MigMode, kOptional, "MIG mode", {{{"nvmlDeviceGetMigMode", 1}}}},
    {Fn::ProcessUtilization,
     kOptional,
     "per-process SM utilisation",
     {{{"nvmlDeviceGetProcessUtilization", 1}}}},
    {Fn::DriverVersion, kOptional, "the driver version", {{{"nvmlSystemGetDriverVersion", 1}}}},
    {Fn::NvmlVersion, kOptional, "the NVML version", {{{"nvmlSystemGetNVMLVersion", 1}}}},
    {Fn::ProcessName,
     kOptional,
     "process names as the driver knows them",
     {{{"nvmlSystemGetProcessName", 1}}}},
    {Fn::MaxMigDeviceCount, kOptional, "MIG instances", {{{"nvmlDeviceGetMaxMigDeviceCount", 1}}}},
    {Fn::MigDeviceHandleByIndex,
     kOptional,
     "MIG instances",
     {{{"nvmlDeviceGetMigDeviceHandleByIndex", 1}}}},
    {Fn::GpuInstanceId, kOptional, "MIG instances", {{{"nvmlDeviceGetGpuInstanceId", 1}}}},
    {Fn::ComputeInstanceId, kOptional, "MIG instances", {{{"nvmlDeviceGetComputeInstanceId", 1}}}},
}};

// SymbolTable indexes by Fn, so entry i must describe Fn(i).
constexpr bool table_is_in_enum_order() {
  for (std::size_t i = 0; i < kSpecs.size(); ++i) {
    if (static_cast<std::size_t>(kSpecs[i].fn) != i) return false;
  }
  return true;
}
static_assert(table_is_in_enum_order());

std::string candidate_names(const SymbolSpec& spec) {
  std::string names;
  for (const auto& candidate : spec.candidates) {
    if (candidate.name == nullptr) break;
    if (!names.empty()) names += " / ";
    names += candidate.name;
  }
  return names;
}

}  // namespace

const std::array<SymbolSpec, kFnCount>& symbol_specs() {
  return kSpecs;
}

core::Result<SymbolTable> SymbolTable::resolve(const SymbolResolver& resolver) {
  SymbolTable table;
  std::string missing_required;
  for (const auto& spec : kSpecs) {
    ResolvedSymbol& slot = table.symbols_[static_cast<std::size_t>(spec.fn)];
    for (const auto& candidate : spec.candidates) {
      if (candidate.name == nullptr) break;
      if (void* address = resolver(candidate.name)) {
        slot = ResolvedSymbol{address, candidate.name, candidate.version};
        break;
      }
    }
    if (slot.address == nullptr && spec.required) {
      if (!missing_required.empty()) missing_required += ", ";
      missing_required += candidate_names(spec);
    }
  }
  if (!missing_required.empty()) {
    return core::Error{"the NVML library lacks required functions (" + missing_required +
                           "), so it is not a usable NVIDIA management library",
                       "point GPUREAP_NVML_LIBRARY or --nvml-library at the driver's "
                       "libnvidia-ml.so.1, or reinstall the NVIDIA driver"};
  }
  return table;
}

std::vector<std::string> SymbolTable::missing_optional() const {
  std::vector<std::string> missing;
  for (const auto& spec : kSpecs) {
    if (!spec.required && !has(spec.fn)) {
      missing.push_back(candidate_names(spec) + " (" + spec.serves + ")");
    }
  }
  return missing;
}

std::vector<SymbolTable::MissingCapability> SymbolTable::missing_capabilities() const {
  std::vector<MissingCapability> out;
  for (const auto& spec : kSpecs) {
    if (spec.required || has(spec.fn)) continue;
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const MissingCapability& m) { return m.serves == spec.serves; });
    if (it == out.end()) it = out.insert(out.end(), {spec.serves, {}});
    it->functions.push_back(spec.candidates[0].name);
  }
  return out;
}

}  // namespace gpureap::backend::nvml

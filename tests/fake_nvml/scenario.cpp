#include "scenario.h"

#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace fake_nvml {
namespace {

using nlohmann::json;

template <class T>
std::optional<T> optional_field(const json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::nullopt;
  return it->get<T>();
}

Kind kind_from_name(const std::string& name) {
  if (name == "compute") return Kind::Compute;
  if (name == "graphics") return Kind::Graphics;
  if (name == "mps") return Kind::Mps;
  throw std::runtime_error("unknown process kind \"" + name + "\" (compute|graphics|mps)");
}

std::optional<std::uint64_t> memory_field(const json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) {
    if (it->get<std::string>() == "not_available") return std::nullopt;
    throw std::runtime_error(std::string(key) + ": a number or \"not_available\"");
  }
  return it->get<std::uint64_t>();
}

Process parse_process(const json& object) {
  Process process;
  process.pid = object.at("pid").get<unsigned>();
  process.used_bytes = memory_field(object, "used_bytes");
  if (auto kind = object.find("kind"); kind != object.end()) {
    process.kinds.clear();
    if (kind->is_array()) {
      for (const auto& k : *kind) process.kinds.push_back(kind_from_name(k.get<std::string>()));
    } else {
      process.kinds.push_back(kind_from_name(kind->get<std::string>()));
    }
  }
  process.holders = object.value("holders", std::vector<unsigned>{process.pid});
  process.release_delay_ms = object.value("release_delay_ms", std::uint64_t{0});
  process.leaked = object.value("leaked", false);
  process.name = optional_field<std::string>(object, "name");
  process.sm_util = optional_field<unsigned>(object, "sm_util");
  process.mem_util = object.value("mem_util", 0u);
  process.gpu_instance_id = object.value("gpu_instance_id", 0xFFFFFFFFu);
  process.compute_instance_id = object.value("compute_instance_id", 0xFFFFFFFFu);
  process.hide_instance_ids = object.value("hide_instance_ids", false);
  return process;
}

MigDevice parse_mig_device(const json& object, const Gpu& gpu, unsigned position) {
  MigDevice mig;
  mig.slot = object.value("slot", position);
  mig.gpu_instance_id = object.at("gpu_instance_id").get<unsigned>();
  mig.compute_instance_id = object.value("compute_instance_id", 0u);
  const std::string profile = object.value("profile", std::string("1g.10gb"));
  mig.name = object.value("name", gpu.name + " MIG " + profile);
  mig.uuid = object.value("uuid", "MIG-fake-" + std::to_string(mig.gpu_instance_id) + "-" +
                                      std::to_string(mig.compute_instance_id));
  mig.total_bytes = object.value("total_bytes", std::uint64_t{10} << 30);
  return mig;
}

Gpu parse_gpu(const json& object, unsigned index) {
  char default_bus_id[32];
  snprintf(default_bus_id, sizeof default_bus_id, "00000000:%02X:00.0", 0x17 + index);
  Gpu gpu;
  gpu.name = object.value("name", "Fake GPU " + std::to_string(index));
  gpu.uuid = object.value("uuid", "GPU-fake-" + std::to_string(index));
  gpu.pci_bus_id = object.value("pci_bus_id", std::string(default_bus_id));
  gpu.minor = object.value("minor", index);
  gpu.total_bytes = object.value("total_bytes", std::uint64_t{80} << 30);
  gpu.reserved_bytes = object.value("reserved_bytes", std::uint64_t{0});
  gpu.driver_held_bytes = object.value("driver_held_bytes", std::uint64_t{0});
  gpu.utilization_percent = optional_field<unsigned>(object, "utilization_percent");
  gpu.memory_utilization_percent = optional_field<unsigned>(object, "memory_utilization_percent");
  gpu.temperature_celsius = optional_field<unsigned>(object, "temperature_celsius");
  gpu.power_mw = optional_field<unsigned>(object, "power_mw");
  gpu.mig_mode = optional_field<bool>(object, "mig_mode");
  if (auto error = optional_field<std::string>(object, "error")) {
    gpu.error = return_code_from_name(*error);
  }
  if (auto error = optional_field<std::string>(object, "handle_error")) {
    gpu.handle_error = return_code_from_name(*error);
  }
  gpu.corrupt_process_records = object.value("corrupt_process_records", false);
  for (const auto& process : object.value("processes", json::array())) {
    gpu.processes.push_back(parse_process(process));
  }
  unsigned position = 0;
  for (const auto& mig : object.value("mig_devices", json::array()))
    gpu.mig_devices.push_back(parse_mig_device(mig, gpu, position++));
  gpu.max_mig_devices = optional_field<unsigned>(object, "max_mig_devices");
  if (!gpu.max_mig_devices && !gpu.mig_devices.empty()) gpu.max_mig_devices = 7;
  for (const auto& mig : gpu.mig_devices)
    if (mig.slot >= *gpu.max_mig_devices)
      throw std::runtime_error("a MIG device's slot must be below max_mig_devices");
  if (auto error = optional_field<std::string>(object, "aggregate_processes_error"))
    gpu.aggregate_processes_error = return_code_from_name(*error);
  return gpu;
}

}  // namespace

nvmlReturn_t return_code_from_name(const std::string& name) {
  static const std::map<std::string, nvmlReturn_t> kCodes = {
      {"uninitialized", NVML_ERROR_UNINITIALIZED},
      {"invalid_argument", NVML_ERROR_INVALID_ARGUMENT},
      {"not_supported", NVML_ERROR_NOT_SUPPORTED},
      {"no_permission", NVML_ERROR_NO_PERMISSION},
      {"already_initialized", NVML_ERROR_ALREADY_INITIALIZED},
      {"not_found", NVML_ERROR_NOT_FOUND},
      {"insufficient_size", NVML_ERROR_INSUFFICIENT_SIZE},
      {"insufficient_power", NVML_ERROR_INSUFFICIENT_POWER},
      {"driver_not_loaded", NVML_ERROR_DRIVER_NOT_LOADED},
      {"timeout", NVML_ERROR_TIMEOUT},
      {"irq_issue", NVML_ERROR_IRQ_ISSUE},
      {"library_not_found", NVML_ERROR_LIBRARY_NOT_FOUND},
      {"function_not_found", NVML_ERROR_FUNCTION_NOT_FOUND},
      {"corrupted_inforom", NVML_ERROR_CORRUPTED_INFOROM},
      {"gpu_lost", NVML_ERROR_GPU_IS_LOST},
      {"gpu_is_lost", NVML_ERROR_GPU_IS_LOST},
      {"reset_required", NVML_ERROR_RESET_REQUIRED},
      {"operating_system", NVML_ERROR_OPERATING_SYSTEM},
      {"lib_rm_version_mismatch", NVML_ERROR_LIB_RM_VERSION_MISMATCH},
      {"in_use", NVML_ERROR_IN_USE},
      {"memory", NVML_ERROR_MEMORY},
      {"no_data", NVML_ERROR_NO_DATA},
      {"unknown", NVML_ERROR_UNKNOWN},
  };
  auto it = kCodes.find(name);
  if (it == kCodes.end()) throw std::runtime_error("unknown NVML error name \"" + name + "\"");
  return it->second;
}

Scenario parse_scenario(const std::string& json_text, const std::string& path) {
  const json root = json::parse(json_text);
  Scenario scenario;
  scenario.path = path;
  if (auto error = optional_field<std::string>(root, "init_error")) {
    scenario.init_error = return_code_from_name(*error);
  }
  scenario.driver_version = root.value("driver_version", scenario.driver_version);
  scenario.nvml_version = root.value("nvml_version", scenario.nvml_version);
  scenario.block_call = root.value("block_call", std::string());
  scenario.meet = root.value("meet", std::map<std::string, unsigned>());
  scenario.slow_calls = root.value("slow_calls", std::map<std::string, unsigned>());
  scenario.call_latency_us = root.value("call_latency_us", std::map<std::string, unsigned>());
  scenario.process_info_v3_stride = root.value("process_info_v3_stride", 24u);
  if (scenario.process_info_v3_stride != 24 && scenario.process_info_v3_stride != 32) {
    throw std::runtime_error("process_info_v3_stride must be 24 or 32");
  }
  scenario.size_query_undercount = root.value("size_query_undercount", 0u);
  scenario.proc_root = root.value("proc_root", scenario.proc_root);
  unsigned index = 0;
  for (const auto& gpu : root.value("gpus", json::array())) {
    scenario.gpus.push_back(parse_gpu(gpu, index++));
  }
  return scenario;
}

}  // namespace fake_nvml

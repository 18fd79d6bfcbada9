#pragma once
// The scenario a test hands the NVML double (format: README.md), parsed into plain structs.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "nvml_abi.h"

namespace fake_nvml {

enum class Kind { Compute, Graphics, Mps };

struct Process {
  unsigned pid = 0;
  std::optional<std::uint64_t> used_bytes;  // empty: reported as NVML_VALUE_NOT_AVAILABLE
  std::vector<Kind> kinds{Kind::Compute};
  std::vector<unsigned> holders;  // the context lives while any of these lives
  std::uint64_t release_delay_ms = 0;
  bool leaked = false;
  std::optional<std::string> name;
  std::optional<unsigned> sm_util;
  unsigned mem_util = 0;
  unsigned gpu_instance_id = 0xFFFFFFFFu;
  unsigned compute_instance_id = 0xFFFFFFFFu;
  // The records leave the instance ids out (0xFFFFFFFF) although the process runs in the
  // instance above: what gpureap must fill from the MIG device handle it read the list from.
  bool hide_instance_ids = false;
};

// One MIG device under a GPU: one compute instance of a GPU instance.
struct MigDevice {
  unsigned slot = 0;  // its index for nvmlDeviceGetMigDeviceHandleByIndex
  unsigned gpu_instance_id = 0;
  unsigned compute_instance_id = 0;
  std::string name;  // nvmlDeviceGetName: "<GPU name> MIG <profile>"
  std::string uuid;
  std::uint64_t total_bytes = 0;  // its GPU instance's memory
};

struct Gpu {
  std::string name;
  std::string uuid;
  std::string pci_bus_id;
  unsigned minor = 0;
  std::uint64_t total_bytes = 0;
  std::uint64_t reserved_bytes = 0;
  std::uint64_t driver_held_bytes = 0;
  std::optional<unsigned> utilization_percent;
  std::optional<unsigned> memory_utilization_percent;
  std::optional<unsigned> temperature_celsius;
  std::optional<unsigned> power_mw;
  std::optional<bool> mig_mode;
  nvmlReturn_t error = NVML_SUCCESS;         // every call on the handle returns this
  nvmlReturn_t handle_error = NVML_SUCCESS;  // nvmlDeviceGetHandleByIndex returns this
  bool corrupt_process_records = false;
  std::vector<Process> processes;
  // MIG: nvmlDeviceGetMaxMigDeviceCount (NOT_SUPPORTED when absent) and the MIG devices.
  std::optional<unsigned> max_mig_devices;
  std::vector<MigDevice> mig_devices;
  // What the GPU's own (aggregate) process lists return instead of the records, e.g.
  // NO_PERMISSION as NVML answers an unprivileged caller in MIG mode.
  nvmlReturn_t aggregate_processes_error = NVML_SUCCESS;
};

struct Scenario {
  std::string path;  // the scenario file; the state file is path + ".state"
  nvmlReturn_t init_error = NVML_SUCCESS;
  std::string driver_version = "550.54.15";
  std::string nvml_version = "12.550.54.15";
  std::string block_call;
  // function (exact export or base name) → calls: a call of any of them answers only once each
  // has had that many calls begun (or fails with TIMEOUT after 10 s): tests that a caller makes
  // those calls side by side.
  std::map<std::string, unsigned> meet;
  // function (exact export or base name) → milliseconds each call takes: a real driver's
  // init and shutdown take a second or more without persistence mode.
  std::map<std::string, unsigned> slow_calls;
  // function (exact export or base name, or "*" for every other one) → microseconds each call
  // takes: a real driver's per-call cost, for benchmarks against the double.
  std::map<std::string, unsigned> call_latency_us;
  unsigned process_info_v3_stride = 24;
  unsigned size_query_undercount = 0;
  std::string proc_root = "/proc";
  std::vector<Gpu> gpus;
};

// Throws std::exception with a readable message on a malformed scenario.
Scenario parse_scenario(const std::string& json_text, const std::string& path);

// "gpu_lost" -> NVML_ERROR_GPU_IS_LOST, ...; throws on an unknown name.
nvmlReturn_t return_code_from_name(const std::string& name);

}  // namespace fake_nvml

#pragma once
// What a GPU driver backend reports. Every metric a backend could not read is an empty
// optional: unknown is never 0 or -1.
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpureap::core {

enum class GpuProcessKind { Compute, Graphics, Mps };
const char* to_string(GpuProcessKind kind);

// One entry of a driver's per-GPU process list.
struct DriverProcess {
  pid_t pid = 0;
  GpuProcessKind kind = GpuProcessKind::Compute;
  std::optional<uint64_t> used_bytes;  // empty: the driver said "not available"
  std::optional<unsigned> gpu_instance_id;
  std::optional<unsigned> compute_instance_id;
  std::optional<std::string> name;  // process name as the driver knows it
  std::optional<unsigned> sm_utilization_percent;
};

struct GpuMemory {
  std::optional<uint64_t> total_bytes;
  std::optional<uint64_t> used_bytes;
  std::optional<uint64_t> free_bytes;
  std::optional<uint64_t> reserved_bytes;
};

struct Gpu {
  unsigned index = 0;
  std::optional<std::string> name;
  std::optional<std::string> uuid;
  std::optional<unsigned> minor;  // /dev/nvidia<minor>; not the same as index
  std::optional<std::string> pci_bus_id;
  GpuMemory memory;
  std::optional<unsigned> utilization_percent;
  std::optional<unsigned> memory_utilization_percent;
  std::optional<unsigned> temperature_celsius;
  std::optional<double> power_watts;
  std::optional<bool> mig_mode;
  std::vector<DriverProcess> processes;
  // Set when the process lists could not be trusted or read (e.g. records failed
  // validation); the lists are then empty rather than garbage.
  std::optional<std::string> processes_error;
  std::optional<std::string> error;  // this GPU failed (e.g. fell off the bus)
};

struct BackendReport {
  std::string name = "nvml";
  bool available = false;
  std::optional<std::string> error;  // why the backend is unavailable, with a next step
  // A stable name for that cause: library-not-found, driver-not-loaded, version-mismatch,
  // no-permission, symbol-missing, init-failed, internal; not-answering (a call timed out).
  std::optional<std::string> error_code;
  std::optional<std::string> driver_version;
  std::optional<std::string> nvml_version;
  std::optional<std::string> library;  // the library actually loaded
  std::vector<Gpu> gpus;
  std::vector<std::string> warnings;
};

}  // namespace gpureap::core

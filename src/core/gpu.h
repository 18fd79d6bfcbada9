#pragma once
// What GPU driver backends report, in terms no vendor owns. Every metric a backend could not
// read is an empty optional: unknown is never 0 or -1.
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/shortage.h"

namespace gpureap::core {

// ServerClient: a client whose work a server of other processes' work runs (WorkServer); its
// JSON name is "mps", as 0.1 wrote it.
enum class GpuProcessKind { Compute, Graphics, ServerClient };
const char* to_string(GpuProcessKind kind);

// A process's memory in one region, as a kernel driver accounts it per open file (DRM
// fdinfo): the device's own memory (vram, local0) or system memory the GPU maps (gtt, system0).
struct MemoryRegionUse {
  std::string name;
  bool device_local = false;
  std::optional<uint64_t> total_bytes;     // every buffer the process's clients have
  std::optional<uint64_t> resident_bytes;  // the part resident in this region
  std::optional<uint64_t> shared_bytes;    // the part shared with other clients
};

// One entry of a driver's per-GPU process list.
struct DriverProcess {
  pid_t pid = 0;
  GpuProcessKind kind = GpuProcessKind::Compute;
  std::optional<uint64_t> used_bytes;  // empty: the driver said "not available"
  std::optional<unsigned> gpu_instance_id;
  std::optional<unsigned> compute_instance_id;
  std::optional<std::string> name;  // process name as the driver knows it
  std::optional<unsigned> sm_utilization_percent;
  // Per region, where the driver tells (DRM); empty for a driver that gives one figure.
  std::vector<MemoryRegionUse> regions;
  // Live processes that hold the same driver clients (a DRM file dup'd or inherited across
  // fork: one client, one set of buffers). The memory is listed once, on this process; they
  // are its holders too.
  std::vector<pid_t> sharers;
  // Set on a process that runs other processes' GPU work in its own context (a backend's
  // WorkServer), once the collector verified what it runs (collect/work_servers): what its vendor
  // calls it (WorkServer::name). Its listed memory is its own, not its clients'.
  std::optional<std::string> serves_clients;
  // On a client of such a server (kind ServerClient): the server listed on this GPU that runs its
  // work (the only one there, or the one of the client's user). Empty: none is known.
  std::optional<pid_t> server;
};

struct GpuMemory {
  std::optional<uint64_t> total_bytes;
  std::optional<uint64_t> used_bytes;
  std::optional<uint64_t> free_bytes;
  std::optional<uint64_t> reserved_bytes;
};

// One instance of a GPU that its driver splits into isolated parts (GpuInstance::kind names
// it as its vendor does): a compute instance inside a GPU instance. Processes run in exactly one;
// the compute instances of one GPU instance share its memory.
struct GpuInstance {
  unsigned gpu_instance_id = 0;
  std::optional<unsigned> compute_instance_id;
  std::optional<std::string> profile;  // the driver's profile name, e.g. "1g.10gb"
  std::optional<std::string> uuid;     // its own, as the vendor writes it
  GpuMemory memory;                    // the GPU instance's memory
  // The device numbers of the files through which a process is granted this instance (NVIDIA:
  // /dev/nvidia-caps/nvidia-cap<M> of the GPU instance and of the compute instance).
  std::vector<dev_t> device_numbers;
  std::string kind;  // what its vendor calls such an instance, set by its backend
};

struct Gpu {
  // The one index users see and type (`--gpu N`): GPUs numbered across every backend, in the
  // registry's order. A backend reports its own numbering here; the combination renumbers.
  unsigned index = 0;
  unsigned backend_index = 0;  // the backend's own id (its library's index)
  std::string backend;         // the backend that reports it (its registry entry's name)
  std::string vendor;          // its registry entry's vendor
  // Stable across reboots where the hardware allows: vendor + UUID, else PCI address, else the
  // backend's id (see gpu_key()).
  std::string key;
  std::optional<std::string> name;
  std::optional<std::string> uuid;
  std::optional<unsigned> minor;  // the vendor's device minor (of its numbered device node)
  std::optional<std::string> pci_bus_id;
  // The device numbers (st_rdev) of the files through which a process reaches this GPU, as its
  // backend knows them (a node of its own, DRM's renderD* and card*, a compute node shared by
  // every GPU of a vendor). The join ties holders to GPUs through these alone.
  std::vector<dev_t> device_numbers;
  // Those of device_numbers that are a display driver's nodes beside the driver that lists the
  // GPU's processes (NVIDIA's nvidia-drm card<N> and renderD<N>): a holder uses the GPU (it is
  // in its place, and blocks its reset), but keeps none of the contexts the driver lists, which
  // live on the GPU's own node. The ghost verdict leaves them out. Empty for a GPU whose driver
  // lists the clients of these nodes itself (a DRM driver's).
  std::vector<dev_t> display_device_numbers;
  // When the backend could not say which files reach this GPU: any GPU file of this major may.
  std::optional<unsigned> device_major;
  GpuMemory memory;
  std::optional<unsigned> utilization_percent;
  std::optional<unsigned> memory_utilization_percent;
  std::optional<unsigned> temperature_celsius;
  std::optional<double> power_watts;
  std::optional<bool> split_mode;  // split into instances (JSON: "mig_mode", as 0.1 named it)
  // Facts of this GPU that only its backend knows, by name (process_record_layout, ...).
  std::vector<std::pair<std::string, std::string>> details;
  std::vector<DriverProcess> processes;
  // Set when the process lists could not be trusted or read (e.g. records failed
  // validation); the lists are then empty rather than garbage.
  std::optional<std::string> processes_error;
  std::optional<std::string> error;  // this GPU failed (e.g. fell off the bus)
  // Set when its driver did not answer and the GPU is known from the kernel alone (its index,
  // bus and device files, nothing measured): what the kernel said it with.
  std::optional<std::string> known_from_kernel;
  // The GPU's instances when it is split (split_mode), in the driver's order; empty otherwise.
  std::vector<GpuInstance> instances;
};

// Why a backend is unavailable; to_string gives the stable names the JSON and metrics carry.
enum class BackendErrorCode {
  LibraryNotFound,
  DriverNotLoaded,
  VersionMismatch,
  NoPermission,
  SymbolMissing,
  InitFailed,
  Internal,
  NotAnswering,  // a call timed out: the driver is wedged
  NotConfigured,
  // Not a failure: the machine has no GPU this backend reads (a backend on a host with only
  // other vendors' GPUs). It does not count as down.
  NoDevice,
  // gpureap itself ran out of file descriptors or memory (procfs/resource_shortage.h): says
  // nothing of the driver; the remedy is gpureap's limit.
  OutOfResources,
};
const char* to_string(BackendErrorCode code);
std::optional<BackendErrorCode> backend_error_code(const std::string& name);

// One backend's state in a reading: whether it answered, and the facts only it knows.
struct BackendStatus {
  std::string name;    // its registry entry's name
  std::string vendor;  // the vendor of the GPUs it reports (its entry's)
  bool available = false;
  std::optional<std::string> error;  // why the backend is unavailable, with a next step
  std::optional<BackendErrorCode> error_code;
  std::optional<Shortage> shortage;  // with OutOfResources: what gpureap ran short of
  std::optional<std::string> driver_version;
  std::optional<std::string> library;  // the library actually loaded
  // Facts of this backend alone, by name, in the order it reports them (a library's version,
  // its record layout). The JSON shows them as fields of the backend's object.
  std::vector<std::pair<std::string, std::string>> details;
  std::vector<std::string> warnings;

  const std::string* detail(const std::string& key) const;
  std::string label() const;  // the name as people write it (upper case)
  void set_detail(const std::string& key, std::string value);
};

// What one backend's collect() returns: its status and the GPUs it sees, in its own numbering.
struct BackendReport : BackendStatus {
  std::vector<Gpu> gpus;
};

// Every backend's report combined: one list of GPUs with global indices and keys.
struct DriverReading {
  std::vector<BackendStatus> backends;  // in the registry's order
  std::vector<Gpu> gpus;                // by global index

  bool any_available() const;
  // The first backend that is unavailable for a reason other than having no GPU to read.
  const BackendStatus* first_down() const;
  const BackendStatus* backend_of(const Gpu& gpu) const;
  const Gpu* gpu(unsigned index) const;
};

// vendor + ":" + UUID, else PCI address, else backend name and id.
std::string gpu_key(const Gpu& gpu);
// Renumbers the GPUs across backends (each backend's ids offset past the previous backend's
// highest), fills backend, vendor and key, and keeps each backend's status. widths[i], when
// given, is how many ids backend i has used before: one that now reports fewer (it is down)
// keeps its place, so the GPUs after it keep their numbers.
DriverReading combine(std::vector<BackendReport> reports, const std::vector<unsigned>& widths = {});

}  // namespace gpureap::core

#include "backend/nvml/nvml_entry.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "backend/nvml/device_major.h"
#include "backend/nvml/drm_nodes.h"
#include "backend/nvml/kernel_gpus.h"
#include "backend/nvml/mps_server.h"
#include "backend/nvml/nvml_backend.h"
#include "kernel/nvidia/xid_parser.h"

namespace gpureap::backend::nvml {
namespace {

constexpr unsigned kNvidiaCtlMinor = 255;
constexpr unsigned kNvidiaModesetMinor = 254;

// /dev/nvidia<N> (195:N) reaches GPU N; nvidiactl and nvidia-modeset are fixed minors of the
// same major; nvidia-uvm (and its tools node, minor 1) has a major given at module load.
// nvidia-drm's /dev/dri nodes are not listed here: they are DRM's, catalogued once for every
// vendor by backend/drm (a kind is unique in the catalogue), and drm_nodes.h joins NVIDIA's to
// their GPU.
procfs::DeviceNodes nvidia_nodes() {
  procfs::DeviceNode ctl{"nvidiactl", "", "nvidiactl"};
  ctl.shows_driver = true;
  ctl.major = kNvidiaDeviceMajor;
  ctl.minor = kNvidiaCtlMinor;
  procfs::DeviceNode uvm{"nvidia-uvm", "", "nvidia-uvm"};
  uvm.devices_name = "nvidia-uvm";
  uvm.max_minor = 0;
  procfs::DeviceNode uvm_tools{"nvidia-uvm-tools", "", "nvidia-uvm-tools"};
  uvm_tools.devices_name = "nvidia-uvm";
  uvm_tools.min_minor = 1;
  procfs::DeviceNode modeset{"nvidia-modeset", "", "nvidia-modeset"};
  modeset.major = kNvidiaDeviceMajor;
  modeset.minor = kNvidiaModesetMinor;
  procfs::DeviceNode gpu{"nvidia", "", "nvidia", true, true, true};
  gpu.major = kNvidiaDeviceMajor;
  // /dev/nvidia-caps/nvidia-cap<M>: a MIG instance's capability file (mig_capabilities.h says
  // which instance M is). It names the instance a process runs on; the context itself lives on
  // the GPU's own node, so it does not reach a GPU by itself.
  procfs::DeviceNode cap{"nvidia-cap", "nvidia-caps", "nvidia-cap", true};
  cap.devices_name = "nvidia-caps";
  return {ctl, uvm, uvm_tools, modeset, gpu, cap};
}

}  // namespace

std::string reset_failure_hint(const std::string& text, unsigned gpu) {
  std::string lower = text;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  if (lower.find("persistence") != std::string::npos)
    return fmt::format(
        "persistence mode keeps the GPU open: `nvidia-smi -i {} -pm 0` (or stop "
        "nvidia-persistenced), reset, then turn it back on",
        gpu);
  if (lower.find("in use") != std::string::npos ||
      lower.find("another client") != std::string::npos)
    return "another client holds the GPU (nvidia-persistenced, DCGM/nv-hostengine, a monitoring "
           "agent, a display server): stop it and retry; `gpureap ps` shows the holders";
  if (lower.find("not supported") != std::string::npos)
    return "this GPU or configuration does not support a reset from nvidia-smi: reboot";
  if (lower.find("permission") != std::string::npos || lower.find("root") != std::string::npos)
    return "run as root";
  return "reboot if nothing else helps";
}

BackendEntry nvml_entry() {
  BackendEntry e;
  e.name = "nvml";
  e.vendor = "nvidia";
  e.calls_driver_library = true;
  e.make = make_nvml_backend_for;
  e.kernel_gpus = [](const BackendSettings& s) {
    auto gpus = read_kernel_gpus(s.proc_root);
    attach_drm_nodes(gpus, s.sys_root);
    return gpus;
  };
  e.device_nodes = nvidia_nodes();
  e.library =
      LibraryOption{"nvml-library", "GPUREAP_NVML_LIBRARY",
                    "path of libnvidia-ml.so.1 (default: $GPUREAP_NVML_LIBRARY, then the system's)",
                    "/path/to/libnvidia-ml.so.1"};
  e.kernel_log = kernel::nvidia::xid_parser();
  // nvidia.ko (os_*, nv_*, _nv*), nvidia-uvm.ko (uvm_*).
  e.kernel_functions = {"uvm_", "nvidia", "nv_", "_nv", "os_acquire", "os_wait"};
  e.protected_programs = {
      "nvidia-persistenced",          "nv-hostengine",          "dcgm-exporter", "dcgmi",
      std::string(kMpsServerProgram), "nvidia-cuda-mps-control"};
  e.reset = ResetTool{
      "nvidia-smi",
      [](unsigned nvml_index) {
        return std::vector<std::string>{"--gpu-reset", "-i", std::to_string(nvml_index)};
      },
      "install the NVIDIA driver utilities, or add their directory to PATH", reset_failure_hint};
  e.words.vendor = "NVIDIA";
  e.words.library = "NVML";
  e.words.check_driver = "nvidia-smi";
  e.words.driver_log_grep = "dmesg | grep -i -e nvrm -e xid";
  e.words.gpu_query = "nvidia-smi -q -i {gpu}";
  e.words.process_query = "nvidia-smi --query-compute-apps=pid,used_memory --format=csv";
  e.words.reload_driver = "rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && modprobe nvidia";
  e.words.mismatch_effect = "CUDA programs will fail to start.";
  e.words.reset = "gpureap reset --gpu {gpu}";
  // Multi-Process Service (nvidia-cuda-mps-control(1), NVIDIA's MPS guide): the control
  // daemon starts one server per user, which runs its clients' work in its own context and
  // holds the device files; NVML lists the server as a compute process and the clients through
  // nvmlDeviceGetMPSComputeRunningProcesses. terminate_client ends one client's outstanding
  // work on a server (recent CUDA releases); quit stops the daemon and every server.
  e.work_server = WorkServer{std::string(kMpsServerProgram),
                             "nvidia-cuda-mps-control",
                             "MPS server",
                             "echo terminate_client {server} {client} | nvidia-cuda-mps-control",
                             "echo quit | nvidia-cuda-mps-control && nvidia-cuda-mps-control -d",
                             "every client of the server loses its work",
                             "var/log/nvidia-mps",
                             {"control.log", "server.log"},
                             "CUDA_MPS_LOG_DIRECTORY",
                             "CUDA_MPS_PIPE_DIRECTORY"};
  // NCCL's shared buffers (ncclShmOpen: mkstemp on "/dev/shm/nccl-XXXXXX"), and the CUDA
  // driver's files for IPC between processes ("cuda.shm.<id>.<producer PID, hex>.<n>").
  e.shm_files = {{"NCCL", "nccl-[A-Za-z0-9]{6}"},
                 {"CUDA IPC", R"(cuda\.shm\.[0-9a-fA-F]+(\.[0-9a-fA-F]+)+)"}};
  return e;
}

}  // namespace gpureap::backend::nvml

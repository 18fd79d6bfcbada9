// Findings about gpureap's view itself: the driver, the NVML records, permissions, and host
// memory left behind by killed jobs.
#include <fmt/format.h>

#include "doctor/diagnose.h"
#include "doctor/evidence.h"
#include "text/escape.h"

namespace gpureap::doctor {

namespace {

// One backend that does not answer or cannot be used.
Finding backend_down(const core::Snapshot& s, const core::BackendStatus& b) {
  Finding f;
  std::string error = b.error.value_or("no GPU backend");
  f.evidence.push_back(b.label() + ": " + error);
  if (b.error_code == core::BackendErrorCode::VersionMismatch) {
    f.code = FindingCode::DriverMismatch;
    f.severity = Severity::Critical;
    f.explanation =
        "The NVML library and the loaded kernel driver have different versions: the driver was "
        "upgraded without reloading the kernel module. CUDA programs will fail to start.";
    f.remedy = {"reboot",
                "or, with no GPU process running: rmmod nvidia_uvm nvidia_drm nvidia_modeset "
                "nvidia && modprobe nvidia"};
  } else if (b.error_code == core::BackendErrorCode::NotAnswering) {
    f.code = FindingCode::DriverNotAnswering;
    f.severity = Severity::Critical;
    f.explanation =
        "A call into the GPU driver did not return: the driver is wedged or a GPU fell off the "
        "bus. "
        "Processes that use the GPU may hang in the driver too (state D); only device-file "
        "holders "
        "are shown.";
    f.remedy = {"dmesg | grep -i -e nvrm -e xid   # what the driver said",
                "gpureap doctor --driver-timeout 30s   # if it is only slow",
                "reboot   # if it stays wedged"};
  } else {
    f.code = FindingCode::DriverMissing;
    f.severity = s.proc.nvidia_device_files ? Severity::Warning : Severity::Info;
    f.explanation =
        s.proc.nvidia_device_files
            ? "NVIDIA device files exist but NVML cannot be used, so GPU memory cannot be "
              "attributed; only device-file holders are shown."
            : "No NVIDIA driver is usable on this machine; gpureap shows the processes "
              "that hold GPU device files only.";
    f.remedy = {"nvidia-smi   # does the driver answer?",
                "gpureap --nvml-library /path/to/libnvidia-ml.so.1   # if NVML lives elsewhere"};
  }
  return f;
}

}  // namespace

void driver_rules(const DoctorInput& in, std::vector<Finding>& out) {
  const auto& s = in.last;
  for (const auto& b : s.drivers.backends)
    if (!b.available && b.error_code != core::BackendErrorCode::NoDevice)
      out.push_back(backend_down(s, b));
  for (const auto& g : s.drivers.gpus) {
    if (in.gpu && *in.gpu != g.index) continue;
    if (g.error) {
      out.push_back(
          {FindingCode::GpuError,
           Severity::Critical,
           {g.index},
           {},
           0,
           {fmt::format("GPU {}: {}", g.index, *g.error)},
           "The driver cannot read this GPU; its memory and processes are unknown.",
           {"dmesg | grep -i -e nvrm -e xid", "nvidia-smi -q -i " + std::to_string(g.index)}});
    }
    if (g.processes_error) {
      out.push_back(
          {FindingCode::NvmlLayout,
           Severity::Warning,
           {g.index},
           {},
           0,
           {fmt::format("GPU {}: {}", g.index, *g.processes_error)},
           "The driver's process records did not pass validation (an NVML ABI gpureap does "
           "not recognise), so they are not shown rather than shown wrong.",
           {"nvidia-smi --query-compute-apps=pid,used_memory --format=csv",
            "report the driver version to the gpureap project"}});
    }
  }
  if (!s.complete()) {
    out.push_back(
        {FindingCode::IncompleteView,
         Severity::Warning,
         {},
         {},
         0,
         {fmt::format("{} processes could not be inspected (their open files are not readable)",
                      s.proc.uninspectable)},
         "Without root (or CAP_SYS_PTRACE) gpureap cannot see other users' open device files, "
         "so holders may be missing and no leak can be proven.",
         {"sudo gpureap doctor"}});
  }
}

void ipc_rules(const DoctorInput& in, std::vector<Finding>& out) {
  if (in.ipc.segments.empty() && in.ipc.files.empty()) return;
  Finding f;
  f.code = FindingCode::IpcResidue;
  f.severity = Severity::Warning;
  for (const auto& seg : in.ipc.segments) {
    f.memory_bytes += seg.size_bytes;
    f.evidence.push_back(
        fmt::format("System V shared memory segment {} ({}) has no attached process; its creator "
                    "{} and last user {} are gone",
                    seg.shmid, bytes_text(seg.size_bytes), seg.creator_pid, seg.last_pid));
    f.remedy.push_back("ipcrm -m " + std::to_string(seg.shmid));
  }
  for (const auto& file : in.ipc.files) {
    f.memory_bytes += file.size_bytes;
    f.evidence.push_back(fmt::format("{} ({}) is neither open nor mapped by any live process",
                                     file.path, bytes_text(file.size_bytes)));
    f.remedy.push_back("rm " + text::shell_quote(file.path));
  }
  if (!in.ipc.files.empty() && !in.ipc.uninspected.empty())
    f.evidence.push_back(
        fmt::format("the maps of {} process(es) could not be read (PID {}); check with "
                    "`fuser -v FILE` before removing a file",
                    in.ipc.uninspected.size(), in.ipc.uninspected.front()));
  f.explanation =
      "Shared memory left behind by killed multiprocessing jobs (e.g. PyTorch DataLoader workers). "
      "It holds host memory until removed.";
  out.push_back(std::move(f));
}

}  // namespace gpureap::doctor

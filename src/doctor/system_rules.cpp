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
    f.remedy = {
        {StepKind::Run, "reboot", "loads the new driver"},
        {StepKind::Or, "rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && modprobe nvidia",
         "with no GPU process running"}};
    f.summary = "NVML and the loaded NVIDIA driver have different versions";
  } else if (b.error_code == core::BackendErrorCode::NotAnswering) {
    f.code = FindingCode::DriverNotAnswering;
    f.severity = Severity::Critical;
    f.explanation =
        "A call into the GPU driver did not return: the driver is wedged or a GPU fell off the "
        "bus. "
        "Processes that use the GPU may hang in the driver too (state D); only device-file "
        "holders "
        "are shown.";
    f.remedy = {"dmesg | grep -i -e nvrm -e xid   # shows what the driver said",
                {StepKind::Then, "gpureap doctor --driver-timeout 30s", "if it is only slow"},
                {StepKind::Or, "reboot", "if it stays wedged"}};
    f.summary = b.label() + " does not answer: the GPU driver is wedged";
  } else {
    f.code = FindingCode::DriverMissing;
    f.severity = s.proc.nvidia_device_files ? Severity::Warning : Severity::Info;
    if (b.vendor != "nvidia") {
      f.explanation = b.label() + " cannot be used; the GPUs it would report are not shown.";
      f.summary = b.label() + " cannot be used: " + error;
    } else if (s.proc.nvidia_device_files) {
      f.explanation =
          "NVIDIA device files exist but NVML cannot be used, so GPU memory cannot be "
          "attributed; only device-file holders are shown.";
      f.remedy = {"nvidia-smi   # does the driver answer?",
                  {StepKind::Or, "gpureap --nvml-library /path/to/libnvidia-ml.so.1",
                   "if NVML lives elsewhere"}};
      f.summary = "NVIDIA device files exist but NVML cannot be used";
    } else if (!s.drivers.gpus.empty()) {
      // A machine with other vendors' GPUs only: nothing about NVIDIA is wrong here.
      f.explanation = fmt::format(
          "No NVIDIA device node exists, so {} is not needed: the {} shown come from the other "
          "backends.",
          b.label(), s.drivers.gpus.size() == 1 ? "GPU" : "GPUs");
      f.summary = b.label() + " is not loaded: this machine has no NVIDIA device";
    } else {
      f.explanation =
          "No GPU driver gpureap knows is usable on this machine; it shows the processes that "
          "hold GPU device files only.";
      f.remedy = {"nvidia-smi   # on an NVIDIA machine: does the driver answer?",
                  {StepKind::Or, "gpureap --nvml-library /path/to/libnvidia-ml.so.1",
                   "if NVML lives elsewhere"}};
      f.summary = "no GPU driver is usable: device-file holders only";
    }
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
      out.push_back({FindingCode::GpuError,
                     Severity::Critical,
                     {g.index},
                     {},
                     0,
                     {fmt::format("GPU {}: {}", g.index, *g.error)},
                     "The driver cannot read this GPU; its memory and processes are unknown.",
                     {"dmesg | grep -i -e nvrm -e xid   # shows the driver's errors",
                      {StepKind::Then, "nvidia-smi -q -i " + std::to_string(g.index),
                       "shows what the driver knows of it"}},
                     fmt::format("GPU {} cannot be read: {}", g.index, *g.error)});
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
           {"nvidia-smi --query-compute-apps=pid,used_memory --format=csv   # lists them instead",
            {StepKind::Then, "report the driver version to the gpureap project"}},
           fmt::format("GPU {}: the driver's process records are not understood", g.index)});
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
         {"sudo gpureap doctor   # sees every process's open files"},
         fmt::format("{} processes could not be inspected: holders may be missing",
                     s.proc.uninspectable)});
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
    f.remedy.push_back({f.remedy.empty() ? StepKind::Run : StepKind::Then,
                        "ipcrm -m " + std::to_string(seg.shmid),
                        "removes segment " + std::to_string(seg.shmid)});
  }
  for (const auto& file : in.ipc.files) {
    f.memory_bytes += file.size_bytes;
    f.evidence.push_back(fmt::format("{} ({}) is neither open nor mapped by any live process",
                                     file.path, bytes_text(file.size_bytes)));
    f.remedy.push_back({f.remedy.empty() ? StepKind::Run : StepKind::Then,
                        "rm " + text::shell_quote(file.path), "removes the file"});
  }
  if (!in.ipc.files.empty() && !in.ipc.uninspected.empty())
    f.evidence.push_back(
        fmt::format("the maps of {} process(es) could not be read (PID {}); check with "
                    "`fuser -v FILE` before removing a file",
                    in.ipc.uninspected.size(), in.ipc.uninspected.front()));
  f.summary =
      fmt::format("{} of shared memory left behind by jobs that ended", bytes_text(f.memory_bytes));
  f.explanation =
      "Shared memory left behind by killed multiprocessing jobs (e.g. PyTorch DataLoader workers). "
      "It holds host memory until removed.";
  out.push_back(std::move(f));
}

}  // namespace gpureap::doctor

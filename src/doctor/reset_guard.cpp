#include "doctor/reset_guard.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "doctor/evidence.h"
#include "text/escape.h"

namespace gpureap::doctor {

core::Result<std::vector<ResetBlocker>> reset_blockers(const core::Snapshot& s, unsigned index) {
  const auto* gpu = s.gpu(index);
  const auto* backend = gpu ? s.drivers.backend_of(*gpu) : nullptr;
  if (!gpu && !s.drivers.any_available()) backend = s.drivers.first_down();
  if (backend && !backend->available)
    return core::Error{"cannot check GPU " + std::to_string(index) + " before a reset: " +
                           backend->error.value_or("its driver is not available"),
                       "a reset needs a working driver; see `gpureap doctor`"};
  if (!gpu)
    return core::Error{fmt::format("there is no GPU {}", index), "`gpureap ps` lists the GPUs"};
  if (gpu->device_numbers.empty())
    return core::Error{fmt::format("GPU {}'s device file is unknown (no minor number)", index),
                       "gpureap cannot prove that nothing holds it"};
  std::vector<ResetBlocker> out;
  for (const auto& r : s.rows) {
    // A gone PID holds nothing: what keeps its context alive is a live holder, which blocks in
    // its own right, and a leaked one is exactly what the reset is for.
    if (!r.process || r.process->stat.is_zombie()) continue;
    std::string why;
    for (const auto& u : r.gpus)
      if (u.index == index) why = "listed by the driver with " + bytes_text(u.used_bytes);
    if (r.process) {
      for (const auto& d : r.process->devices)
        if (d.reaches(*gpu))
          why += (why.empty() ? "" : "; ") +
                 fmt::format("holds {} on fd {}", d.path, fmt::join(d.fds, ","));
    }
    if (!why.empty()) out.push_back({r.pid, r.process->stat.comm, std::move(why)});
  }
  return out;
}

std::vector<std::string> reset_refusal(unsigned gpu, const std::vector<ResetBlocker>& blockers) {
  const bool one = blockers.size() == 1;
  std::vector<std::string> out{fmt::format(
      "refusing to reset GPU {}: {} {} it, and a reset would end {}:", gpu,
      one ? "this process" : "these processes", one ? "uses" : "use", one ? "it" : "them")};
  std::vector<pid_t> pids;
  for (const auto& b : blockers) {
    out.push_back(fmt::format("  PID {} ({}): {}", b.pid, text::terminal_safe(b.comm),
                              text::terminal_safe(b.why)));
    pids.push_back(b.pid);
  }
  out.push_back(
      fmt::format("  end {} first: gpureap kill {}", one ? "it" : "them", pid_list(pids)));
  return out;
}

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

}  // namespace gpureap::doctor

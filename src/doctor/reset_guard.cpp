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

}  // namespace gpureap::doctor

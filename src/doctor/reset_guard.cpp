#include "doctor/reset_guard.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "core/gpu_place.h"
#include "doctor/evidence.h"
#include "text/escape.h"

namespace gpureap::doctor {
namespace {

// More processes than this in one instance are counted, not named.
constexpr size_t kInstanceNamedHolders = 6;

// "bob's PID 4242 (python)": whose work a reset ends.
std::string instance_holder_words(const core::ProcessRow& r) {
  const auto& d = r.process->details;
  std::string user = d && d->user  ? text::terminal_safe(*d->user)
                     : d && d->uid ? "uid " + std::to_string(*d->uid)
                                   : std::string("an unknown user");
  return fmt::format("{}'s PID {} ({})", user, r.pid, text::terminal_safe(r.process->stat.comm));
}

std::string safe_instance_words(const core::GpuInstance& i) {
  return text::terminal_safe(core::instance_words(i));
}

// "GPU 0 is split into <kind> instances": what its vendor calls them (GpuInstance::kind).
std::string split_words(const core::Gpu& gpu, unsigned index) {
  const std::string& kind = gpu.instances.front().kind;
  return fmt::format("GPU {} is split into {} instances", index,
                     kind.empty() ? std::string("GPU") : text::terminal_safe(kind));
}

struct InstancePlace {
  unsigned gpu_instance = 0;
  std::string profile;
  std::vector<std::string> holders;  // instance_holder_words, at most kInstanceNamedHolders
  size_t more = 0;
};

// Each GPU instance of the GPU with the live processes working in it.
std::vector<InstancePlace> instance_places(const core::Snapshot& s, const core::Gpu& gpu) {
  std::vector<InstancePlace> out;
  for (unsigned gi : core::gpu_instance_ids(gpu)) {
    InstancePlace place{gi, safe_instance_words(*core::find_instance(gpu, gi)), {}, 0};
    for (const auto& r : s.rows) {
      if (!r.process || r.process->stat.is_zombie() || !core::in_place(s, r, {gpu.index, gi}))
        continue;
      if (place.holders.size() < kInstanceNamedHolders)
        place.holders.push_back(instance_holder_words(r));
      else
        ++place.more;
    }
    out.push_back(std::move(place));
  }
  return out;
}

std::string instance_holders_text(const InstancePlace& p) {
  if (p.holders.empty()) return "nothing runs there";
  std::string text = fmt::format("{}", fmt::join(p.holders, ", "));
  if (p.more) text += fmt::format(" and {} more", p.more);
  return text;
}

}  // namespace

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
    if (why.empty()) continue;
    ResetBlocker blocker{r.pid, r.process->stat.comm, std::move(why), std::nullopt};
    for (unsigned gi : core::gpu_instance_ids(*gpu))
      if (!blocker.gpu_instance && core::in_place(s, r, {index, gi})) blocker.gpu_instance = gi;
    out.push_back(std::move(blocker));
  }
  return out;
}

std::optional<std::string> paused_reset_note(const core::Snapshot& s, unsigned index) {
  auto blockers = reset_blockers(s, index);
  if (!blockers) return std::nullopt;
  std::vector<pid_t> paused;
  for (const auto& b : *blockers)
    if (const auto* p = s.find(b.pid); p && (p->stat.state == 'T' || p->stat.state == 't'))
      paused.push_back(b.pid);
  if (paused.empty()) return std::nullopt;
  const bool one = paused.size() == 1;
  return fmt::format("reset is blocked by paused PID{} {}; resume or end {} first", one ? "" : "s",
                     pid_list(paused), one ? "it" : "them");
}

std::vector<std::string> split_reset_lines(const core::Snapshot& s, unsigned index) {
  const core::Gpu* gpu = s.gpu(index);
  if (!gpu || gpu->instances.empty()) return {};
  std::vector<std::string> out{split_words(*gpu, index) +
                               ": a reset ends the work on every instance:"};
  for (const auto& p : instance_places(s, *gpu))
    out.push_back(fmt::format("  {} ({}): {}", core::instance_place(index, p.gpu_instance),
                              p.profile, instance_holders_text(p)));
  return out;
}

std::optional<std::string> split_reset_note(const core::Snapshot& s, unsigned index) {
  const core::Gpu* gpu = s.gpu(index);
  if (!gpu || gpu->instances.empty()) return std::nullopt;
  std::vector<std::string> places;
  for (const auto& p : instance_places(s, *gpu))
    places.push_back(fmt::format("{} ({}: {})", core::instance_place(index, p.gpu_instance),
                                 p.profile,
                                 p.holders.empty() ? "nothing" : instance_holders_text(p)));
  return fmt::format("{}: a reset ends the work on every instance: {}", split_words(*gpu, index),
                     fmt::join(places, ", "));
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

std::vector<std::string> reset_refusal(const core::Snapshot& s, unsigned index,
                                       const std::vector<ResetBlocker>& blockers) {
  auto plain = reset_refusal(index, blockers);
  if (auto paused = paused_reset_note(s, index)) plain.insert(plain.end() - 1, "  " + *paused);
  const core::Gpu* gpu = s.gpu(index);
  if (!gpu || gpu->instances.empty()) return plain;
  // The header and the closing command stay; the blockers go under their instances.
  std::vector<std::string> out{plain.front()};
  auto group = [&](std::optional<unsigned> gi, const std::string& heading) {
    bool any = false;
    for (const auto& b : blockers) {
      if (b.gpu_instance != gi) continue;
      if (!any) out.push_back(heading);
      any = true;
      out.push_back(fmt::format("    PID {} ({}): {}", b.pid, text::terminal_safe(b.comm),
                                text::terminal_safe(b.why)));
    }
  };
  for (unsigned gi : core::gpu_instance_ids(*gpu))
    group(gi, fmt::format("  on {} ({}):", core::instance_place(index, gi),
                          safe_instance_words(*core::find_instance(*gpu, gi))));
  group(std::nullopt, fmt::format("  on GPU {} itself, in no one instance:", index));
  if (auto paused = paused_reset_note(s, index)) out.push_back("  " + *paused);
  out.push_back(plain.back());
  return out;
}

}  // namespace gpureap::doctor

#include "kernel/oom_kill.h"

#include <charconv>
#include <string_view>

namespace gpureap::kernel {
namespace {

// What the kernel writes when it kills (mm/oom_kill.c): the machine's, a memory cgroup's, and
// the bare line of kernels before 5.0 (after "Out of memory: Kill process N ... or sacrifice
// child").
constexpr std::string_view kMachine = "Out of memory: Killed process ";
constexpr std::string_view kCgroup = "Memory cgroup out of memory: Killed process ";
constexpr std::string_view kBare = "Killed process ";

template <class T>
std::optional<T> number_at(std::string_view s) {
  T v{};
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end == s.data()) return std::nullopt;
  return v;
}

}  // namespace

std::optional<core::OomKill> oom_kill(const KmsgRecord& r) {
  if (r.facility != 0 || r.fragment) return std::nullopt;
  std::string_view text = r.text;
  core::OomKill k;
  if (text.starts_with(kMachine))
    text.remove_prefix(kMachine.size());
  else if (text.starts_with(kCgroup)) {
    text.remove_prefix(kCgroup.size());
    k.memory_cgroup = true;
  } else if (text.starts_with(kBare))
    text.remove_prefix(kBare.size());
  else
    return std::nullopt;
  auto pid = number_at<pid_t>(text);
  if (!pid || *pid <= 0) return std::nullopt;
  k.pid = *pid;
  // "(name) total-vm:...": the name is the process's, and may hold ") " itself: it ends at the
  // last ") total-vm:" (or the last ")" of a record without the sizes).
  if (auto open = text.find(" ("); open != std::string_view::npos) {
    auto close = text.rfind(") total-vm:");
    if (close == std::string_view::npos || close < open) close = text.rfind(')');
    if (close != std::string_view::npos && close > open)
      k.name = std::string(text.substr(open + 2, close - open - 2));
  }
  if (auto u = text.rfind("UID:"); u != std::string_view::npos)
    k.uid = number_at<uid_t>(text.substr(u + 4));
  k.seq = r.seq;
  k.since_boot_usec = r.usec;
  k.text = r.text;
  return k;
}

}  // namespace gpureap::kernel

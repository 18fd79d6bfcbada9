#include "core/pid_space.h"

#include <cstdlib>

namespace gpureap::core {
namespace {

// /proc/stat's btime is the wall clock less the time since boot, read anew each time: two reads
// of one boot differ by a rounding, or by what the clock was slewed in between. Another boot is
// further apart than this (a reboot takes longer).
constexpr long long kSameBootSeconds = 2;

}  // namespace

std::optional<std::string> pid_space_mismatch(const PidSpace& theirs, const PidSpace& ours) {
  if (!theirs.boot_time || !ours.boot_time) return "the boot time is unknown";
  if (std::llabs(*theirs.boot_time - *ours.boot_time) > kSameBootSeconds)
    return "they come from another boot";
  if (!theirs.pid_namespace || !ours.pid_namespace) return "the PID namespace is unknown";
  if (*theirs.pid_namespace != *ours.pid_namespace) return "they come from another PID namespace";
  return std::nullopt;
}

}  // namespace gpureap::core

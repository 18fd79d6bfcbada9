#include "procfs/resource_shortage.h"

#include <dirent.h>
#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

namespace gpureap::procfs {
namespace {

std::string limit_text(rlim_t v) {
  return v == RLIM_INFINITY ? std::string("unlimited") : std::to_string(v);
}

}  // namespace

bool is_resource_shortage(int err) {
  return err == EMFILE || err == ENFILE || err == ENOMEM || err == ENOBUFS;
}

std::optional<core::Shortage> shortage_of(int err) {
  switch (err) {
    case EMFILE:
      return core::Shortage::OwnDescriptors;
    case ENFILE:
      return core::Shortage::SystemFiles;
    case ENOMEM:
    case ENOBUFS:
      return core::Shortage::Memory;
    default:
      return std::nullopt;
  }
}

std::string shortage_remedy(int err) {
  if (err == EMFILE) {
    // getrlimit fails only for a bad resource or pointer, and the kernel keeps both limits at
    // or under fs.nr_open: the advice raises the limit from what it is, not to a fixed figure
    // that may be the very one gpureap ran out under.
    struct rlimit lim {};
    (void)::getrlimit(RLIMIT_NOFILE, &lim);
    const auto hard = lim.rlim_max == RLIM_INFINITY ? SIZE_MAX : static_cast<size_t>(lim.rlim_max);
    return "gpureap ran out of file descriptors (its limit is " + limit_text(lim.rlim_cur) +
           ", hard limit " + limit_text(lim.rlim_max) + "); " +
           raise_descriptor_limit(static_cast<size_t>(lim.rlim_cur), hard);
  }
  if (err == ENFILE)
    return "the system's table of open files is full; close files elsewhere or raise "
           "fs.file-max (sysctl), then run gpureap again";
  return "the machine (or gpureap's memory limit, `ulimit -v`) ran out of memory; free "
         "memory and run gpureap again";
}

std::optional<DescriptorUse> descriptors_nearly_spent(size_t spare) {
  struct rlimit lim {};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) return std::nullopt;
  DescriptorUse use;
  use.limit = static_cast<size_t>(lim.rlim_cur);
  use.hard = lim.rlim_max == RLIM_INFINITY ? SIZE_MAX : static_cast<size_t>(lim.rlim_max);
  // None left: the kernel says so. The process's own /proc entry is read whatever root the scan
  // was given: these are gpureap's descriptors, not a scanned process's.
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) {
    if (errno != EMFILE) return std::nullopt;
    use.open = use.limit;
    return use;
  }
  size_t entries = 0;
  while (const dirent* e = ::readdir(dir))
    if (e->d_name[0] != '.') ++entries;
  ::closedir(dir);
  use.open = entries > 0 ? entries - 1 : 0;  // less the directory's own
  if (use.open + spare < use.limit) return std::nullopt;
  return use;
}

std::string raise_descriptor_limit(size_t limit, size_t hard) {
  // Enough for the library and whatever else this process keeps. A shell raises the soft limit
  // up to the hard one without privilege (past it only as root); a systemd unit sets both.
  const size_t wanted = std::max<size_t>(limit * 2, 1024);
  const std::string unit = "LimitNOFILE=" + std::to_string(wanted) + " in its systemd unit";
  if (hard > limit) {
    const size_t raise_to = std::min(wanted, hard);
    return "raise the limit of open files and run it again: `ulimit -n " +
           std::to_string(raise_to) + "` in the shell" +
           (raise_to < wanted ? " (its hard limit; as root, more)" : "") + ", " + unit;
  }
  return "raise the limit of open files, hard and soft, and run it again: `ulimit -Hn " +
         std::to_string(wanted) + "; ulimit -n " + std::to_string(wanted) + "` in a root shell, " +
         unit;
}

}  // namespace gpureap::procfs

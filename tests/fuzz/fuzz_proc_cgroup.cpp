// /proc/PID/cgroup (procfs::parse_cgroup): the container a process runs in. Paths come from
// whoever creates cgroups, so any text is possible.
#include "fuzz_check.h"
#include "procfs/parsers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto info = gpureap::procfs::parse_cgroup(fuzz_text(data, size));
  if (info) {
    FUZZ_CHECK(!info->runtime.empty());
    if (info->id) FUZZ_CHECK(info->id->size() >= 12);
    // The cgroup it names is a path from the hierarchy's root, or nothing.
    FUZZ_CHECK(info->cgroup.empty() || info->cgroup.front() == '/');
    FUZZ_CHECK(info->hierarchy.find('\n') == std::string::npos);
  }
  return 0;
}

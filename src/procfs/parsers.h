#pragma once
// Pure parsers for the text of /proc files. They never touch the file system, so every
// hostile or truncated input can be tested from fixtures.
#include <string_view>

#include "core/process.h"
#include "core/rank_labels.h"
#include "core/result.h"

namespace gpureap::procfs {

// /proc/PID/stat. comm may hold spaces, ')' and newlines: it ends at the last ')'.
core::Result<core::ProcessStat> parse_stat(std::string_view text);

// /proc/PID/stat's exit_code (field 52): a zombie's wait status, as waitpid(2) reports it;
// 0 for a live process, and where the reader may not see it. Empty when the field is missing.
std::optional<int> parse_exit_status(std::string_view text);

// /proc/PID/cmdline: NUL-separated argv; empty for kernel threads and zombies.
std::vector<std::string> parse_cmdline(std::string_view text);

struct StatusFields {
  std::optional<pid_t> tgid;  // the process (thread group) this task belongs to
  std::optional<uid_t> uid;
  std::optional<uid_t> euid;
  std::vector<pid_t> ns_pids;
  std::optional<long> threads;
  std::optional<uint64_t> rss_bytes;
};
// /proc/PID/status: the fields gpureap uses; missing fields stay empty.
StatusFields parse_status(std::string_view text);

// /proc/PID/cgroup (v1 and v2 lines): the container the process runs in, if any.
std::optional<core::ContainerInfo> parse_cgroup(std::string_view text);

// /proc/PID/wchan: the kernel function a sleeping task waits in; empty when none ("0").
std::optional<std::string> parse_wchan(std::string_view text);

// /proc/PID/environ (NUL-separated NAME=VALUE): the rank labels a distributed job's launcher
// set (core/rank_labels.h); empty when it set none. A value that is not a number is left out.
std::optional<core::RankLabels> parse_rank_labels(std::string_view text);

// /proc/PID/fdinfo/FD: the open file's flags (the "flags:" line, octal, as open(2) took them);
// empty when the text has none.
std::optional<unsigned> parse_fdinfo_flags(std::string_view text);

// /proc/stat: boot time (btime), seconds since the epoch.
std::optional<long long> parse_boot_time(std::string_view text);

// /proc/devices: the major number of a character device driver by name.
std::optional<unsigned> parse_char_major(std::string_view text, std::string_view driver);

}  // namespace gpureap::procfs

#pragma once
// The host's load average and memory (the host line of `top`), read from the procfs root the
// rest of a collection comes from. The parsers are pure.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gpureap::procfs {

struct HostStats {
  std::optional<double> load1, load5, load15;
  std::optional<uint64_t> mem_total_bytes;
  std::optional<uint64_t> mem_available_bytes;
};

// "0.52 0.61 0.70 2/1234 5678"
void parse_loadavg(std::string_view text, HostStats& out);
// "MemTotal:       65843036 kB" ... "MemAvailable:   51234567 kB"
void parse_meminfo(std::string_view text, HostStats& out);
// <proc_root>/loadavg and <proc_root>/meminfo; what cannot be read stays empty.
HostStats read_host_stats(const std::string& proc_root);

}  // namespace gpureap::procfs

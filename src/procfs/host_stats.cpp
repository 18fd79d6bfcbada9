#include "procfs/host_stats.h"

#include <charconv>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "procfs/file_read.h"

namespace gpureap::procfs {
namespace {

std::string slurp(const std::string& path) {
  return procfs::read_file(path).data;
}

std::optional<double> to_double(std::string_view word) {
  if (word.empty()) return std::nullopt;
  std::string w(word);
  char* end = nullptr;
  double v = std::strtod(w.c_str(), &end);
  if (end != w.c_str() + w.size() || v < 0) return std::nullopt;
  return v;
}

}  // namespace

void parse_loadavg(std::string_view text, HostStats& out) {
  std::optional<double>* fields[] = {&out.load1, &out.load5, &out.load15};
  size_t i = 0;
  for (auto* field : fields) {
    while (i < text.size() && text[i] == ' ') ++i;
    size_t end = text.find_first_of(" \n", i);
    if (end == std::string_view::npos) end = text.size();
    *field = to_double(text.substr(i, end - i));
    i = end;
  }
}

void parse_meminfo(std::string_view text, HostStats& out) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view key = line.substr(0, colon), rest = line.substr(colon + 1);
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    uint64_t kb = 0;
    auto [p, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), kb);
    if (ec != std::errc() || p == rest.data()) continue;
    if (std::string_view(p, static_cast<size_t>(rest.data() + rest.size() - p)) != " kB") continue;
    if (key == "MemTotal")
      out.mem_total_bytes = kb * 1024;
    else if (key == "MemAvailable")
      out.mem_available_bytes = kb * 1024;
  }
}

HostStats read_host_stats(const std::string& proc_root) {
  HostStats h;
  parse_loadavg(slurp(proc_root + "/loadavg"), h);
  parse_meminfo(slurp(proc_root + "/meminfo"), h);
  return h;
}

}  // namespace gpureap::procfs

#include <cctype>
#include <charconv>
#include <optional>
#include <vector>

#include "procfs/parsers.h"

namespace gpureap::procfs {
namespace {

template <class T>
bool parse_number(std::string_view s, T& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

std::vector<std::string_view> split_spaces(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\n')) ++i;
    size_t j = i;
    while (j < s.size() && s[j] != ' ' && s[j] != '\n') ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

// The fields after comm: f[0] is field 3; exit_code is field 52 (Linux 3.5 and later), 0
// where the reader may not trace the process.
std::optional<int> exit_code_of(const std::vector<std::string_view>& f) {
  int status = 0;
  if (f.size() < 50 || !parse_number(f[49], status) || status < 0) return std::nullopt;
  return status;
}

core::Error bad(std::string_view why) {
  return core::Error{"malformed /proc/PID/stat: " + std::string(why), ""};
}

}  // namespace

core::Result<core::ProcessStat> parse_stat(std::string_view text) {
  size_t open = text.find(" (");
  size_t close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open + 1)
    return bad("no '(comm)'");
  core::ProcessStat st;
  if (!parse_number(text.substr(0, open), st.pid) || st.pid <= 0) return bad("bad pid");
  st.comm = std::string(text.substr(open + 2, close - open - 2));
  auto f = split_spaces(text.substr(close + 1));
  // f[0] is field 3 (state); utime and stime are fields 14 and 15, starttime 22, rss 24.
  if (f.size() < 22) return bad("truncated (" + std::to_string(f.size() + 2) + " fields)");
  // The kernel's state is one letter; anything else (a control byte from a planted tree) is
  // garbage that must not reach a table, a CSV or a kill plan.
  if (f[0].size() != 1 || !std::isalpha(static_cast<unsigned char>(f[0][0])))
    return bad("bad state");
  st.state = f[0][0];
  long long starttime = 0, utime = 0, stime = 0;
  if (!parse_number(f[1], st.ppid) || !parse_number(f[2], st.pgid) || !parse_number(f[3], st.sid) ||
      !parse_number(f[6], st.flags) || !parse_number(f[17], st.num_threads) ||
      !parse_number(f[19], starttime) || !parse_number(f[21], st.rss_pages) || starttime < 0 ||
      !parse_number(f[11], utime) || !parse_number(f[12], stime) || utime < 0 || stime < 0 ||
      st.ppid < 0)
    return bad("non-numeric field");
  st.start_ticks = static_cast<uint64_t>(starttime);
  st.cpu_ticks = static_cast<uint64_t>(utime) + static_cast<uint64_t>(stime);
  // How a zombie ended, from the same read: it cannot change while it is one.
  if (st.is_zombie()) st.wait_status = exit_code_of(f);
  return st;
}

std::optional<int> parse_exit_status(std::string_view text) {
  size_t close = text.rfind(')');
  if (close == std::string_view::npos) return std::nullopt;
  return exit_code_of(split_spaces(text.substr(close + 1)));
}

}  // namespace gpureap::procfs

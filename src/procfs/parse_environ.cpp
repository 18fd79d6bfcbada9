#include <charconv>

#include "procfs/parsers.h"

namespace gpureap::procfs {
namespace {

std::optional<unsigned> number(std::string_view v) {
  unsigned n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || end != v.data() + v.size() || v.empty()) return std::nullopt;
  return n;
}

}  // namespace

std::optional<core::RankLabels> parse_rank_labels(std::string_view text) {
  core::RankLabels l;
  bool any = false;
  while (!text.empty()) {
    auto nul = text.find('\0');
    auto entry = text.substr(0, nul);
    text = nul == std::string_view::npos ? std::string_view() : text.substr(nul + 1);
    auto eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    auto key = entry.substr(0, eq);
    auto value = entry.substr(eq + 1);
    auto set = [&](std::optional<unsigned>& field) {
      field = number(value);
      any = any || field.has_value();
    };
    if (key == "RANK")
      set(l.rank);
    else if (key == "LOCAL_RANK")
      set(l.local_rank);
    else if (key == "WORLD_SIZE")
      set(l.world_size);
    else if (key == "LOCAL_WORLD_SIZE")
      set(l.local_world_size);
    else if (key == "TORCHELASTIC_RESTART_COUNT")
      set(l.restart_count);
    else if (key == "TORCHELASTIC_MAX_RESTARTS")
      set(l.max_restarts);
    else if (key == "TORCHELASTIC_RUN_ID" && !value.empty() && value.size() <= 256) {
      l.run_id = std::string(value);
      any = true;
    }
  }
  if (!any) return std::nullopt;
  return l;
}

}  // namespace gpureap::procfs

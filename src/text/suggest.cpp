#include "text/suggest.h"

#include <algorithm>

namespace gpureap::text {
namespace {

// Longer input is not a typo of anything gpureap names; the bound keeps the table small.
constexpr size_t kLongest = 64;

size_t allowed_edits(std::string_view typed) {
  while (typed.starts_with('-')) typed.remove_prefix(1);
  if (typed.size() <= 4) return 1;
  if (typed.size() <= 8) return 2;
  return 3;
}

}  // namespace

size_t edit_distance(std::string_view a, std::string_view b) {
  // Optimal string alignment distance: three rows of the Damerau-Levenshtein table.
  const size_t n = b.size();
  std::vector<size_t> before(n + 1), previous(n + 1), current(n + 1);
  for (size_t j = 0; j <= n; ++j) previous[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (size_t j = 1; j <= n; ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        current[j] = std::min(current[j], before[j - 2] + 1);
    }
    std::swap(before, previous);
    std::swap(previous, current);
  }
  return previous[n];
}

std::optional<std::string> closest_match(std::string_view typed,
                                         const std::vector<std::string>& candidates) {
  if (typed.empty() || typed.size() > kLongest) return std::nullopt;
  if (std::find(candidates.begin(), candidates.end(), typed) != candidates.end())
    return std::nullopt;
  const std::string* best = nullptr;
  size_t best_distance = allowed_edits(typed) + 1;
  for (const auto& c : candidates) {
    if (c.empty() || c.size() > kLongest) continue;
    size_t d = edit_distance(typed, c);
    if (d < best_distance) {
      best = &c;
      best_distance = d;
    }
  }
  if (best) return *best;
  // A beginning long enough to mean something: `--no-dae` for `--no-daemon`.
  std::string_view bare = typed;
  while (bare.starts_with('-')) bare.remove_prefix(1);
  if (bare.size() < 3) return std::nullopt;
  const std::string* only = nullptr;
  for (const auto& c : candidates) {
    if (!std::string_view(c).starts_with(typed)) continue;
    if (only) return std::nullopt;  // ambiguous
    only = &c;
  }
  if (only) return *only;
  return std::nullopt;
}

}  // namespace gpureap::text

#include "alert/alert.h"

#include <fmt/format.h>

#include <algorithm>

namespace gpureap::alert {

bool Notification::firing() const {
  return std::any_of(alerts.begin(), alerts.end(), [](const Alert& a) { return !a.resolved(); });
}

std::string fingerprint(const Labels& labels) {
  constexpr uint64_t kOffset = 14695981039346656037ull;
  constexpr uint64_t kPrime = 1099511628211ull;
  uint64_t h = kOffset;
  auto add = [&](const std::string& s) {
    for (unsigned char c : s) h = (h ^ c) * kPrime;
    h = (h ^ 0xffu) * kPrime;
  };
  for (const auto& [name, value] : labels) {  // std::map: already sorted by name
    add(name);
    add(value);
  }
  return fmt::format("{:016x}", h);
}

}  // namespace gpureap::alert

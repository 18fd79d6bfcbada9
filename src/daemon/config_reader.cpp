#include "daemon/config_reader.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "core/byte_size.h"
#include "core/duration.h"
#include "text/escape.h"

namespace gpureap::daemon::config {
namespace {

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace

void Problems::add(const toml::source_region& where, const std::string& message) {
  entries.push_back({where.begin.line, where.begin.column,
                     source + ":" + std::to_string(where.begin.line) + ":" +
                         std::to_string(where.begin.column) + ": " + message});
}

std::string Problems::text() const {
  auto sorted = entries;
  std::stable_sort(sorted.begin(), sorted.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.line, a.column) < std::tie(b.line, b.column);
  });
  std::string out;
  for (const auto& e : sorted) out += (out.empty() ? "" : "\n") + e.text;
  return out;
}

std::string in_quotes(std::string_view s) {
  return "\"" + text::terminal_safe(s) + "\"";
}

std::optional<std::string> read_string(const toml::node& node, std::string_view key, Problems& p) {
  if (auto v = node.value<std::string>()) return v;
  p.add(node, std::string(key) + " must be a string (in double quotes)");
  return std::nullopt;
}

std::optional<std::string> read_nonempty_string(const toml::node& node, std::string_view key,
                                                Problems& p) {
  auto v = read_string(node, key, p);
  if (v && v->empty()) {
    p.add(node, std::string(key) + " must not be empty");
    return std::nullopt;
  }
  return v;
}

std::optional<bool> read_bool(const toml::node& node, std::string_view key, Problems& p) {
  if (node.is_boolean()) return *node.value<bool>();
  p.add(node, std::string(key) + " must be true or false (without quotes)");
  return std::nullopt;
}

std::optional<int64_t> read_integer(const toml::node& node, std::string_view key, int64_t min,
                                    int64_t max, Problems& p) {
  auto v = node.value<int64_t>();
  if (!node.is_integer() || !v || *v < min || *v > max) {
    p.add(node, std::string(key) + " must be a whole number from " + std::to_string(min) + " to " +
                    std::to_string(max));
    return std::nullopt;
  }
  return v;
}

std::optional<double> read_number(const toml::node& node, std::string_view key, double min,
                                  double max, Problems& p) {
  std::optional<double> v;
  if (node.is_integer()) v = static_cast<double>(*node.value<int64_t>());
  if (node.is_floating_point()) v = *node.value<double>();
  auto text = [](double d) {
    std::string s = std::to_string(d);
    s.erase(s.find_last_not_of('0') + 1);
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
  };
  if (!v || !std::isfinite(*v) || *v < min || *v > max) {
    p.add(node, std::string(key) + " must be a number from " + text(min) + " to " + text(max) +
                    " (without quotes)");
    return std::nullopt;
  }
  return v;
}

std::optional<std::chrono::milliseconds> read_duration(const toml::node& node, std::string_view key,
                                                       std::chrono::milliseconds min,
                                                       std::chrono::milliseconds max, Problems& p) {
  if (node.is_integer() || node.is_floating_point()) {
    p.add(node,
          std::string(key) + " is a duration: write it as a string with a unit, e.g. \"10s\"");
    return std::nullopt;
  }
  auto text = read_string(node, key, p);
  if (!text) return std::nullopt;
  auto d = core::parse_duration(*text);
  if (!d) {
    p.add(node, std::string(key) + ": " + d.error().text());
    return std::nullopt;
  }
  if (*d < min || *d > max) {
    p.add(node, std::string(key) + " = " + in_quotes(*text) + " is out of range: it must be from " +
                    core::format_duration(min) + " to " + core::format_duration(max));
    return std::nullopt;
  }
  return *d;
}

std::optional<uint64_t> read_byte_size(const toml::node& node, std::string_view key, Problems& p) {
  if (node.is_integer()) {
    int64_t v = *node.value<int64_t>();
    if (v >= 0) return static_cast<uint64_t>(v);
    p.add(node, std::string(key) + " must not be negative");
    return std::nullopt;
  }
  if (!node.is_string()) {
    p.add(node, std::string(key) + " is a size: write it as a string with a unit, e.g. \"1GiB\"");
    return std::nullopt;
  }
  auto bytes = core::parse_byte_size(*node.value<std::string>());
  if (!bytes) {
    p.add(node, std::string(key) + ": " + bytes.error().text());
    return std::nullopt;
  }
  return *bytes;
}

std::optional<std::vector<std::string>> read_string_list(const toml::node& node,
                                                         std::string_view key, bool allow_empty,
                                                         Problems& p) {
  if (auto s = node.value<std::string>()) return std::vector<std::string>{*s};
  const auto* array = node.as_array();
  bool ok = array != nullptr && (allow_empty || !array->empty());
  std::vector<std::string> out;
  if (ok)
    for (const auto& item : *array) {
      auto s = item.value<std::string>();
      if (!s) {
        ok = false;
        break;
      }
      out.push_back(*s);
    }
  if (!ok) {
    p.add(node, std::string(key) + " must be a string or a" + (allow_empty ? "n" : " non-empty") +
                    " array of strings, e.g. [\"a\", \"b\"]");
    return std::nullopt;
  }
  return out;
}

std::string unknown_key_message(std::string_view key, const std::vector<std::string_view>& known) {
  std::string msg = "unknown key " + in_quotes(key);
  std::string_view best;
  size_t best_d = 3;
  std::string list;
  for (auto name : known) {
    list += (list.empty() ? "" : ", ") + std::string(name);
    size_t d = edit_distance(key, name);
    if (d < best_d) best_d = d, best = name;
  }
  if (!best.empty()) return msg + " (did you mean \"" + std::string(best) + "\"?)";
  return msg + " (known keys: " + list + ")";
}

std::vector<const toml::table*> tables_of(const toml::node& node, std::string_view key,
                                          Problems& p) {
  std::vector<const toml::table*> out;
  const auto* array = node.as_array();
  if (array && array->is_array_of_tables()) {
    for (const auto& item : *array) out.push_back(item.as_table());
    return out;
  }
  p.add(node, "write each " + std::string(key) + " as its own [[" + std::string(key) +
                  "]] table (see docs/config.md)");
  return out;
}

}  // namespace gpureap::daemon::config

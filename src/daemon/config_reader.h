#pragma once
// Reading TOML config values with every problem reported at its line and column. Shared by
// the top-level keys (config.cpp) and the [[policy]], [[alert]] and [[sink]] tables, so every
// key of the file is read, checked and reported the same way.
#include <toml++/toml.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpureap::daemon::config {

// Problems found while reading a file: all of them are reported, not only the first.
struct Problems {
  struct Entry {
    uint32_t line = 0, column = 0;
    std::string text;  // "source:line:column: message"
  };
  std::string source;
  std::vector<Entry> entries;

  void add(const toml::source_region& where, const std::string& message);
  void add(const toml::node& node, const std::string& message) { add(node.source(), message); }
  bool empty() const { return entries.empty(); }
  // Every problem, one per line, in the order of the file.
  std::string text() const;
};

// "\"text\"", made terminal-safe: values from the file in messages.
std::string in_quotes(std::string_view s);

// Each reader reports a wrong type or value under `key` and returns empty.
std::optional<std::string> read_string(const toml::node& node, std::string_view key, Problems& p);
// A string that must not be empty.
std::optional<std::string> read_nonempty_string(const toml::node& node, std::string_view key,
                                                Problems& p);
std::optional<bool> read_bool(const toml::node& node, std::string_view key, Problems& p);
std::optional<int64_t> read_integer(const toml::node& node, std::string_view key, int64_t min,
                                    int64_t max, Problems& p);
// An integer or a decimal number.
std::optional<double> read_number(const toml::node& node, std::string_view key, double min,
                                  double max, Problems& p);
// A string with a unit ("10s"), within [min, max].
std::optional<std::chrono::milliseconds> read_duration(const toml::node& node, std::string_view key,
                                                       std::chrono::milliseconds min,
                                                       std::chrono::milliseconds max, Problems& p);
// A string with a unit ("1GiB") or a whole number of bytes.
std::optional<uint64_t> read_byte_size(const toml::node& node, std::string_view key, Problems& p);
// One string or an array of strings; `allow_empty` permits [].
std::optional<std::vector<std::string>> read_string_list(const toml::node& node,
                                                         std::string_view key, bool allow_empty,
                                                         Problems& p);

// A string naming one value of a set: `parse` gives it, or empty for anything else, which is
// reported with the `choices` ("notify, terminate, kill").
template <class Parse>
auto read_choice(const toml::node& node, std::string_view key, Parse parse,
                 std::string_view choices, Problems& p) -> decltype(parse(std::string_view())) {
  auto text = read_string(node, key, p);
  if (!text) return std::nullopt;
  auto value = parse(*text);
  if (!value) p.add(node, std::string(key) + " must be one of " + std::string(choices));
  return value;
}

// "unknown key "x" (did you mean "y"?)", or the list of known keys.
std::string unknown_key_message(std::string_view key, const std::vector<std::string_view>& known);

// A key of a table and what reading it does.
template <class T>
struct Field {
  std::string_view name;
  std::function<void(const toml::node&, T&, Problems&)> apply;
};

// Reads every key of `table` through `fields`; unknown keys are problems (`where` names the
// table in messages, e.g. "[[policy]] "), never silently ignored.
template <class T>
void read_fields(const toml::table& table, const std::vector<Field<T>>& fields, T& out, Problems& p,
                 std::string_view where = {}) {
  std::vector<std::string_view> known;
  known.reserve(fields.size());
  for (const auto& f : fields) known.push_back(f.name);
  for (auto&& [key, node] : table) {
    const Field<T>* field = nullptr;
    for (const auto& f : fields)
      if (f.name == key.str()) field = &f;
    if (!field) {
      p.add(key.source(), std::string(where) + unknown_key_message(key.str(), known));
      continue;
    }
    field->apply(node, out, p);
  }
}

// The `name` key every table has: a non-empty string.
template <class T>
Field<T> name_field() {
  return {"name", [](const toml::node& node, T& table, Problems& p) {
            if (auto v = read_nonempty_string(node, "name", p)) table.name = *v;
          }};
}

// The tables of an array of tables ([[policy]] ...); anything else is a problem.
std::vector<const toml::table*> tables_of(const toml::node& node, std::string_view key,
                                          Problems& p);

}  // namespace gpureap::daemon::config

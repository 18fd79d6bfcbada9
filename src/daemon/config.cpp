#include "daemon/config.h"

#include <sys/stat.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <vector>

#include "output/escape.h"
#include "core/duration.h"

namespace gpureap::daemon {
namespace {

using std::chrono::milliseconds;

// Problems found while reading a file: all of them are reported, not only the first.
struct Problems {
  std::string source;
  std::vector<std::string> lines;

  void add(const toml::source_region& where, const std::string& message) {
    lines.push_back(source + ":" + std::to_string(where.begin.line) + ":" +
                    std::to_string(where.begin.column) + ": " + message);
  }
};

using Apply = std::function<void(const toml::node&, DaemonConfig&, Problems&)>;

struct KeySpec {
  std::string_view name;
  Apply apply;
};

std::string quoted(std::string_view s) {
  return "\"" + output::terminal_safe(s) + "\"";
}

std::optional<std::string> string_value(const toml::node& node, std::string_view key, Problems& p) {
  if (auto v = node.value<std::string>()) return v;
  p.add(node.source(), std::string(key) + " must be a string (in double quotes)");
  return std::nullopt;
}

std::string format_ms(milliseconds d) {
  return core::format_duration(d);
}

Apply duration(std::string_view key, milliseconds DaemonConfig::*field, milliseconds min,
               milliseconds max) {
  return [=](const toml::node& node, DaemonConfig& c, Problems& p) {
    if (node.is_integer() || node.is_floating_point()) {
      p.add(node.source(),
            std::string(key) + " is a duration: write it as a string with a unit, e.g. \"10s\"");
      return;
    }
    auto text = string_value(node, key, p);
    if (!text) return;
    auto d = core::parse_duration(*text);
    if (!d) {
      p.add(node.source(), std::string(key) + ": " + d.error().text());
      return;
    }
    if (*d < min || *d > max) {
      p.add(node.source(), std::string(key) + " = " + quoted(*text) +
                               " is out of range: it must be from " + format_ms(min) + " to " +
                               format_ms(max));
      return;
    }
    c.*field = *d;
  };
}

const std::vector<KeySpec>& key_specs() {
  using namespace std::chrono_literals;
  static const std::vector<KeySpec> specs = {
      {"listen",
       [](const toml::node& node, DaemonConfig& c, Problems& p) {
         auto text = string_value(node, "listen", p);
         if (!text) return;
         auto a = exporter::parse_listen_address(*text);
         if (!a)
           p.add(node.source(), a.error().text());
         else
           c.listen = *a;
       }},
      {"interval", duration("interval", &DaemonConfig::interval, 100ms, 1h)},
      {"holder_scan_interval",
       duration("holder_scan_interval", &DaemonConfig::holder_scan_interval, 100ms, 1h)},
      {"full_scan_interval",
       duration("full_scan_interval", &DaemonConfig::full_scan_interval, 100ms, 24h)},
      {"history", duration("history", &DaemonConfig::history, 1s, 24h * 7)},
      {"driver_timeout", duration("driver_timeout", &DaemonConfig::driver_timeout, 100ms, 10min)},
      {"history_max_processes",
       [](const toml::node& node, DaemonConfig& c, Problems& p) {
         auto v = node.value<int64_t>();
         if (!node.is_integer() || !v || *v < 1 || *v > 1'000'000) {
           p.add(node.source(), "history_max_processes must be a whole number from 1 to 1000000");
           return;
         }
         c.history_max_processes = static_cast<size_t>(*v);
       }},
      {"per_process_metrics",
       [](const toml::node& node, DaemonConfig& c, Problems& p) {
         if (!node.is_boolean()) {
           p.add(node.source(), "per_process_metrics must be true or false (without quotes)");
           return;
         }
         c.per_process_metrics = *node.value<bool>();
       }},
      {"auth_token_file",
       [](const toml::node& node, DaemonConfig& c, Problems& p) {
         auto text = string_value(node, "auth_token_file", p);
         if (!text) return;
         if (text->empty())
           c.auth_token_file.reset();  // "" means no token, as when the key is absent
         else if (text->front() != '/')
           p.add(node.source(), "auth_token_file must be an absolute path");
         else
           c.auth_token_file = *text;
       }},
      {"log_level",
       [](const toml::node& node, DaemonConfig& c, Problems& p) {
         auto text = string_value(node, "log_level", p);
         if (!text) return;
         auto level = log_level_from_string(*text);
         if (!level)
           p.add(node.source(), "log_level must be one of error, warning, notice, info, debug");
         else
           c.log_level = *level;
       }},
  };
  return specs;
}

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

std::string unknown_key_message(std::string_view key) {
  std::string msg = "unknown key " + quoted(key);
  std::string_view best;
  size_t best_d = 3;
  std::string known;
  for (const auto& spec : key_specs()) {
    known += (known.empty() ? "" : ", ") + std::string(spec.name);
    size_t d = edit_distance(key, spec.name);
    if (d < best_d) best_d = d, best = spec.name;
  }
  if (!best.empty()) return msg + " (did you mean \"" + std::string(best) + "\"?)";
  return msg + " (known keys: " + known + ")";
}

// Rules between keys, checked once every key is read. A scan interval the file leaves out
// follows the one it sets ("interval = 30s" alone means holder scans every 30 s, not an error);
// two it sets that contradict each other are an error at the later key.
void cross_checks(const toml::table& root, DaemonConfig& c, Problems& p) {
  auto given = [&](const char* key) { return root.get(key) != nullptr; };
  auto where = [&](const char* key, const char* other) {
    return given(key)     ? root.get(key)->source()
           : given(other) ? root.get(other)->source()
                          : root.source();
  };
  if (!given("holder_scan_interval"))
    c.holder_scan_interval = std::max(c.holder_scan_interval, c.interval);
  if (!given("full_scan_interval"))
    c.full_scan_interval = std::max(c.full_scan_interval, c.holder_scan_interval);
  if (c.holder_scan_interval < c.interval)
    p.add(where("holder_scan_interval", "interval"),
          "holder_scan_interval (" + format_ms(c.holder_scan_interval) +
              ") must not be shorter than interval (" + format_ms(c.interval) + ")");
  if (c.full_scan_interval < c.holder_scan_interval)
    p.add(where("full_scan_interval", "holder_scan_interval"),
          "full_scan_interval (" + format_ms(c.full_scan_interval) +
              ") must not be shorter than holder_scan_interval (" +
              format_ms(c.holder_scan_interval) + ")");
  if (c.history < c.interval)
    p.add(where("history", "interval"), "history (" + format_ms(c.history) +
                                            ") must not be shorter than interval (" +
                                            format_ms(c.interval) + ")");
}

}  // namespace

core::Result<DaemonConfig> parse_config(std::string_view text, const std::string& source) {
  Problems problems{source, {}};
  toml::table root;
  try {
    root = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    problems.add(e.source(), std::string(e.description()));
    return core::Error{problems.lines.front(),
                       "fix the TOML syntax; docs/config.md lists every key"};
  }
  DaemonConfig config;
  config.source = source;
  for (auto&& [key, node] : root) {
    const auto& specs = key_specs();
    auto spec = std::find_if(specs.begin(), specs.end(),
                             [&](const KeySpec& s) { return s.name == key.str(); });
    if (spec == specs.end()) {
      problems.add(key.source(), unknown_key_message(key.str()));
      continue;
    }
    spec->apply(node, config, problems);
  }
  if (problems.lines.empty()) cross_checks(root, config, problems);
  if (!problems.lines.empty()) {
    std::string message;
    for (const auto& line : problems.lines) message += (message.empty() ? "" : "\n") + line;
    return core::Error{message, "docs/config.md lists every key with its default"};
  }
  return config;
}

core::Result<std::string> read_token_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return core::Error{"cannot read auth_token_file " + path + ": " + std::strerror(errno),
                       "create it with the token (e.g. `openssl rand -hex 32 > " + path +
                           "; chmod 600 " + path + "`) or remove auth_token_file from the config"};
  }
  std::stringstream ss;
  ss << in.rdbuf();
  std::string token = ss.str();
  auto not_space = [](unsigned char ch) { return !std::isspace(ch); };
  token.erase(token.begin(), std::find_if(token.begin(), token.end(), not_space));
  token.erase(std::find_if(token.rbegin(), token.rend(), not_space).base(), token.end());
  if (token.empty())
    return core::Error{"auth_token_file " + path + " is empty",
                       "write the token into it (e.g. `openssl rand -hex 32`)"};
  if (token.find_first_of(" \t\r\n") != std::string::npos)
    return core::Error{"auth_token_file " + path + " holds more than one word",
                       "a bearer token is one word without spaces"};
  return token;
}

core::Result<DaemonConfig> load_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return core::Error{"cannot read config file " + path + ": " + std::strerror(errno),
                       "check the path, or start without --config to use the built-in defaults"};
  }
  std::stringstream ss;
  ss << in.rdbuf();
  auto config = parse_config(ss.str(), path);
  if (!config) return config;
  if (config->auth_token_file) {
    auto token = read_token_file(*config->auth_token_file);
    if (!token) return core::Error{path + ": " + token.error().message, token.error().hint};
    config->auth_token = *token;
  }
  return config;
}

}  // namespace gpureap::daemon

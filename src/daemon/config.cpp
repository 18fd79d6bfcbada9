#include "daemon/config.h"

#include <sys/stat.h>
#include <sys/un.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <vector>

#include "core/duration.h"
#include "daemon/config_reader.h"
#include "daemon/config_sections.h"
#include "procfs/file_read.h"

namespace gpureap::daemon {
namespace {

using config::Field;
using config::in_quotes;
using config::Problems;
using std::chrono::milliseconds;

// A Unix socket's path, its terminating NUL included.
constexpr size_t kMaxLocalSocketPath = sizeof(sockaddr_un::sun_path);

std::string format_ms(milliseconds d) {
  return core::format_duration(d);
}

Field<DaemonConfig> duration(std::string_view key, milliseconds DaemonConfig::*field,
                             milliseconds min, milliseconds max) {
  return {key, [=](const toml::node& node, DaemonConfig& c, Problems& p) {
            if (auto d = config::read_duration(node, key, min, max, p)) c.*field = *d;
          }};
}

Field<DaemonConfig> absolute_path(std::string_view key, std::string DaemonConfig::*field) {
  return {key, [=](const toml::node& node, DaemonConfig& c, Problems& p) {
            auto text = config::read_string(node, key, p);
            if (!text) return;
            if (text->empty() || text->front() != '/')
              p.add(node, std::string(key) + " must be an absolute path");
            else
              c.*field = *text;
          }};
}

const std::vector<Field<DaemonConfig>>& key_specs() {
  using namespace std::chrono_literals;
  static const std::vector<Field<DaemonConfig>> specs = {
      {"listen",
       [](const toml::node& node, DaemonConfig& c, Problems& p) {
         auto text = config::read_string(node, "listen", p);
         if (!text) return;
         auto a = exporter::parse_listen_address(*text);
         if (!a)
           p.add(node, a.error().text());
         else
           c.listen = *a;
       }},
      duration("interval", &DaemonConfig::interval, 100ms, 1h),
      duration("holder_scan_interval", &DaemonConfig::holder_scan_interval, 100ms, 1h),
      duration("full_scan_interval", &DaemonConfig::full_scan_interval, 100ms, 24h),
      {"holder_events",
       [](const toml::node& node, DaemonConfig& c, Problems& p) {
         if (auto v = config::read_bool(node, "holder_events", p)) c.holder_events = *v;
       }},
      duration("event_full_scan_interval", &DaemonConfig::event_full_scan_interval, 1s, 24h),
      duration("history", &DaemonConfig::history, 1s, 24h * 7),
      duration("driver_timeout", &DaemonConfig::driver_timeout, 100ms, 10min),
      {"unattributed_threshold",
       [](const toml::node& node, DaemonConfig& c, Problems& p) {
         auto text = config::read_string(node, "unattributed_threshold", p);
         if (!text) return;
         auto t = doctor::parse_unattributed_threshold(*text);
         if (!t)
           p.add(node, t.error().text());
         else
           c.unattributed_threshold = *t;
       }},
      duration("stalled_job_critical_after", &DaemonConfig::stalled_job_critical_after, 1s,
               24h * 7),
      {"history_max_processes",
       [](const toml::node& node, DaemonConfig& c, Problems& p) {
         if (auto v = config::read_integer(node, "history_max_processes", 1, 1'000'000, p))
           c.history_max_processes = static_cast<size_t>(*v);
       }},
      {"per_process_metrics",
       [](const toml::node& node, DaemonConfig& c, Problems& p) {
         if (auto v = config::read_bool(node, "per_process_metrics", p)) c.per_process_metrics = *v;
       }},
      {"auth_token_file",
       [](const toml::node& node, DaemonConfig& c, Problems& p) {
         auto text = config::read_string(node, "auth_token_file", p);
         if (!text) return;
         if (text->empty())
           c.auth_token_file.reset();  // "" means no token, as when the key is absent
         else if (text->front() != '/')
           p.add(node, "auth_token_file must be an absolute path");
         else
           c.auth_token_file = *text;
       }},
      {"local_socket",
       [](const toml::node& node, DaemonConfig& c, Problems& p) {
         auto text = config::read_string(node, "local_socket", p);
         if (!text) return;
         if (!text->empty() && text->front() != '/')
           p.add(node, "local_socket must be an absolute path, or \"\" for none");
         else if (text->size() >= kMaxLocalSocketPath)
           p.add(node, "local_socket is longer than " + std::to_string(kMaxLocalSocketPath - 1) +
                           " bytes, the most a Unix socket's path may have");
         else
           c.local_socket = *text;
       }},
      {"sightings_file",
       [](const toml::node& node, DaemonConfig& c, Problems& p) {
         auto text = config::read_string(node, "sightings_file", p);
         if (!text) return;
         if (!text->empty() && (text->front() != '/' || text->back() == '/'))
           p.add(node, "sightings_file must be an absolute path to a file, or \"\" for none");
         else
           c.sightings_file = *text;
       }},
      {"log_level",
       [](const toml::node& node, DaemonConfig& c, Problems& p) {
         if (auto level = config::read_choice(node, "log_level", base::log_level_from_string,
                                              "error, warning, notice, info, debug", p))
           c.log_level = *level;
       }},
      {"enforce",
       [](const toml::node& node, DaemonConfig& c, Problems& p) {
         if (auto v = config::read_bool(node, "enforce", p)) c.enforce = *v;
       }},
      absolute_path("audit_log", &DaemonConfig::audit_log),
      {"audit_max_bytes",
       [](const toml::node& node, DaemonConfig& c, Problems& p) {
         auto v = config::read_byte_size(node, "audit_max_bytes", p);
         if (v && *v < 4096)
           p.add(node, "audit_max_bytes must be at least 4KiB");
         else if (v)
           c.audit_max_bytes = *v;
       }},
      {"audit_keep",
       [](const toml::node& node, DaemonConfig& c, Problems& p) {
         if (auto v = config::read_integer(node, "audit_keep", 1, 1000, p))
           c.audit_keep = static_cast<unsigned>(*v);
       }},
      {"policy", read_policies},
      {"alert", read_alerts},
      {"sink", read_sinks},
  };
  return specs;
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
    return core::Error{problems.text(), "fix the TOML syntax; docs/config.md lists every key"};
  }
  DaemonConfig config;
  config.source = source;
  config::read_fields(root, key_specs(), config, problems);
  // Between-key rules compare values, so they wait until every value is valid; the tables'
  // own rules (names, references) hold whatever the values.
  if (problems.empty()) cross_checks(root, config, problems);
  check_references(root, config, problems);
  if (!problems.empty())
    return core::Error{problems.text(), "docs/config.md lists every key with its default"};
  return config;
}

static std::string read_error_text(int error) {
  return error == ENOTSUP ? "it is not a regular file" : std::strerror(error);
}

core::Result<std::string> read_token_file(const std::string& path) {
  auto in = procfs::read_file(path, 64u << 10);
  if (!in.ok()) {
    return core::Error{"cannot read auth_token_file " + path + ": " + read_error_text(in.error),
                       "create it with the token (e.g. `openssl rand -hex 32 > " + path +
                           "; chmod 600 " + path + "`) or remove auth_token_file from the config"};
  }
  std::string token = std::move(in.data);
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
  // Only a regular file is a config: a directory or a FIFO at the path is an error, at start
  // and on reload (where the running config then stays), never an empty config.
  auto in = procfs::read_file(path, 16u << 20);
  if (!in.ok())
    return core::Error{
        "cannot read config file " + path + ": " + read_error_text(in.error),
        "give the path of a TOML file, or start without --config to use the built-in defaults"};
  if (in.truncated)
    return core::Error{"config file " + path + " is larger than 16 MiB", "is it the right file?"};
  auto config = parse_config(in.data, path);
  if (!config) return config;
  if (config->auth_token_file) {
    auto token = read_token_file(*config->auth_token_file);
    if (!token) return core::Error{path + ": " + token.error().message, token.error().hint};
    config->auth_token = *token;
  }
  return config;
}

}  // namespace gpureap::daemon

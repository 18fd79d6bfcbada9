// [[policy]] tables: every key, and the rules between a policy's keys.
#include <algorithm>

#include "core/duration.h"
#include "daemon/config_sections.h"

namespace gpureap::daemon {
namespace {

using config::Field;
using config::in_quotes;
using config::Problems;
using policy::Policy;
using std::chrono::milliseconds;
using namespace std::chrono_literals;

std::string anomaly_names() {
  std::string out;
  for (auto a : {core::Anomaly::Stopped, core::Anomaly::Uninterruptible, core::Anomaly::Orphan,
                 core::Anomaly::ZombieChildren, core::Anomaly::NoSuchProcess,
                 core::Anomaly::ForeignNamespace, core::Anomaly::InheritedHolder,
                 core::Anomaly::Leaked, core::Anomaly::StalledJob})
    out += (out.empty() ? "" : ", ") + std::string(core::to_string(a));
  return out;
}

Field<Policy> text(std::string_view key, std::optional<std::string> Policy::*field) {
  return {key, [=](const toml::node& node, Policy& pol, Problems& p) {
            if (auto v = config::read_nonempty_string(node, key, p)) pol.*field = *v;
          }};
}

Field<Policy> span(std::string_view key, std::optional<milliseconds> Policy::*field) {
  return {key, [=](const toml::node& node, Policy& pol, Problems& p) {
            if (auto d = config::read_duration(node, key, 1s, 24h * 30, p)) pol.*field = *d;
          }};
}

const std::vector<Field<Policy>>& policy_fields() {
  static const std::vector<Field<Policy>> fields = {
      config::name_field<Policy>(),
      text("user", &Policy::user),
      {"uid",
       [](const toml::node& node, Policy& pol, Problems& p) {
         if (auto v = config::read_integer(node, "uid", 0, 4294967294, p))
           pol.uid = static_cast<uid_t>(*v);
       }},
      text("command", &Policy::command),
      text("container", &Policy::container),
      {"gpu",
       [](const toml::node& node, Policy& pol, Problems& p) {
         if (auto v = config::read_integer(node, "gpu", 0, 1023, p))
           pol.gpu = static_cast<unsigned>(*v);
       }},
      {"anomalies",
       [](const toml::node& node, Policy& pol, Problems& p) {
         auto names = config::read_string_list(node, "anomalies", false, p);
         if (!names) return;
         for (const auto& name : *names) {
           auto a = core::anomaly_from_string(name);
           if (!a) {
             p.add(node, "anomalies: unknown anomaly " + in_quotes(name) +
                             " (known: " + anomaly_names() + ")");
             continue;
           }
           if (std::find(pol.anomalies.begin(), pol.anomalies.end(), *a) == pol.anomalies.end())
             pol.anomalies.push_back(*a);
         }
       }},
      {"min_memory",
       [](const toml::node& node, Policy& pol, Problems& p) {
         if (auto v = config::read_byte_size(node, "min_memory", p)) pol.min_memory = *v;
       }},
      span("idle", &Policy::idle),
      {"idle_below",
       [](const toml::node& node, Policy& pol, Problems& p) {
         if (auto v = config::read_integer(node, "idle_below", 1, 100, p))
           pol.idle_below = static_cast<unsigned>(*v);
       }},
      span("runtime", &Policy::runtime),
      {"after",
       [](const toml::node& node, Policy& pol, Problems& p) {
         if (auto d = config::read_duration(node, "after", 0ms, 24h * 30, p)) pol.after = *d;
       }},
      {"action",
       [](const toml::node& node, Policy& pol, Problems& p) {
         if (auto a = config::read_choice(node, "action", policy::action_from_string,
                                          "notify, terminate, kill", p))
           pol.action = *a;
       }},
      {"grace",
       [](const toml::node& node, Policy& pol, Problems& p) {
         if (auto d = config::read_duration(node, "grace", 100ms, 10min, p)) pol.grace = *d;
       }},
  };
  return fields;
}

// Rules between the keys of one policy; `t` is its table, for the lines of the keys.
void check_policy(const toml::table& t, const Policy& pol, const DaemonConfig& c, Problems& p) {
  auto at = [&](const char* key) -> const toml::source_region& {
    return t.get(key) ? t.get(key)->source() : t.source();
  };
  std::string who = "policy " + in_quotes(pol.name) + ": ";
  if (!t.get("name")) p.add(t.source(), "[[policy]] needs a name");
  if (t.get("user") && t.get("uid")) p.add(at("uid"), who + "give user or uid, not both");
  if (t.get("idle_below") && !pol.idle)
    p.add(at("idle_below"),
          who + "idle_below needs idle (how long the process must stay below it)");
  if (t.get("grace") && pol.action != policy::Action::Terminate)
    p.add(at("grace"),
          who + "grace applies only to action = \"terminate\" (kill sends SIGKILL at once)");
  bool condition = pol.user || pol.uid || pol.command || pol.container || pol.gpu ||
                   !pol.anomalies.empty() || pol.min_memory || pol.idle || pol.runtime;
  if (!condition)
    p.add(t.source(), who +
                          "has no condition, so it would match every GPU process; add user, "
                          "command, anomalies, min_memory, idle or runtime");
  if (pol.idle && *pol.idle > c.history)
    p.add(at("idle"), who + "idle (" + core::format_duration(*pol.idle) +
                          ") is longer than history (" + core::format_duration(c.history) +
                          "): the daemon keeps no record that long; raise history");
  if (pol.action != policy::Action::Notify)
    for (auto a : pol.anomalies)
      if (a == core::Anomaly::Leaked || a == core::Anomaly::ForeignNamespace)
        p.add(at("anomalies"),
              who + std::string(core::to_string(a)) +
                  " memory has no process here that could be ended; use action = \"notify\" "
                  "(and `gpureap reset` for leaked memory)");
}

}  // namespace

void read_policies(const toml::node& node, DaemonConfig& c, Problems& p) {
  for (const toml::table* t : config::tables_of(node, "policy", p)) {
    Policy pol;
    pol.line = static_cast<unsigned>(t->source().begin.line);
    config::read_fields(*t, policy_fields(), pol, p, "[[policy]] ");
    c.policies.push_back(std::move(pol));
  }
}

// Called once every table is read (history may come after the policies in the file).
void check_policies(const toml::table& root, const DaemonConfig& c, Problems& p) {
  const auto* array = root.get("policy") ? root.get("policy")->as_array() : nullptr;
  if (!array) return;
  for (size_t i = 0; i < array->size() && i < c.policies.size(); ++i)
    if (const auto* t = (*array)[i].as_table()) check_policy(*t, c.policies[i], c, p);
}

}  // namespace gpureap::daemon

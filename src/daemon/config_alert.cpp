// [[alert]] and [[sink]] tables, and the rules across all tables (unique names, references).
#include <algorithm>
#include <cstdlib>
#include <set>

#include "alert/sink_kind.h"
#include "daemon/config_sections.h"

namespace gpureap::daemon {
namespace {

using alert::Condition;
using alert::Rule;
using alert::SinkConfig;
using config::Field;
using config::in_quotes;
using config::Problems;
using namespace std::chrono_literals;

const std::vector<Field<Rule>>& alert_fields() {
  static const std::vector<Field<Rule>> fields = {
      config::name_field<Rule>(),
      {"condition",
       [](const toml::node& node, Rule& r, Problems& p) {
         if (auto c = config::read_choice(node, "condition", alert::condition_from_string,
                                          "memory_ratio, ghost_memory, unattributed_memory, "
                                          "finding, policy_action",
                                          p))
           r.condition = *c;
       }},
      // `above` is read by check_alert, once the condition is known: a ratio or a size.
      {"above", [](const toml::node&, Rule&, Problems&) {}},
      {"code",
       [](const toml::node& node, Rule& r, Problems& p) {
         auto v = config::read_string(node, "code", p);
         if (!v) return;
         auto code = doctor::finding_code_from_string(*v);
         if (!code) {
           p.add(node, "code: unknown finding code " + in_quotes(*v) +
                           " (known: " + doctor::finding_code_list() + ")");
           return;
         }
         r.finding_code = *code;
       }},
      {"min_severity",
       [](const toml::node& node, Rule& r, Problems& p) {
         if (auto s = config::read_choice(node, "min_severity", doctor::severity_from_string,
                                          "info, warning, critical", p))
           r.finding_severity = *s;
       }},
      {"policy",
       [](const toml::node& node, Rule& r, Problems& p) {
         if (auto v = config::read_string(node, "policy", p)) r.policy = *v;
       }},
      {"gpu",
       [](const toml::node& node, Rule& r, Problems& p) {
         if (auto v = config::read_integer(node, "gpu", 0, 1023, p))
           r.gpu = static_cast<unsigned>(*v);
       }},
      {"for",
       [](const toml::node& node, Rule& r, Problems& p) {
         if (auto d = config::read_duration(node, "for", 0ms, 24h * 7, p)) r.for_duration = *d;
       }},
      {"repeat_interval",
       [](const toml::node& node, Rule& r, Problems& p) {
         if (auto d = config::read_duration(node, "repeat_interval", 1min, 24h * 7, p))
           r.repeat_interval = *d;
       }},
      {"severity",
       [](const toml::node& node, Rule& r, Problems& p) {
         if (auto v = config::read_nonempty_string(node, "severity", p)) r.severity = *v;
       }},
      {"sinks",
       [](const toml::node& node, Rule& r, Problems& p) {
         if (auto v = config::read_string_list(node, "sinks", false, p)) r.sinks = *v;
       }},
  };
  return fields;
}

// A ratio: a number from 0 to 1, or a percentage string ("95%").
std::optional<double> ratio(const toml::node& node, Problems& p) {
  auto text = node.value<std::string>();
  if (!text || text->empty() || text->back() != '%')
    return config::read_number(node, "above", 0, 1, p);
  char* end = nullptr;
  double percent = std::strtod(text->c_str(), &end);
  if (end != text->c_str() + text->size() - 1 || !(percent >= 0 && percent <= 100)) {
    p.add(node,
          "above must be a ratio from 0 to 1 (0.95) or a percentage from 0% to 100% (\"95%\")");
    return std::nullopt;
  }
  return percent / 100;
}

// The keys whose meaning depends on the condition.
void check_alert(const toml::table& t, Rule& r, Problems& p) {
  std::string who = "alert " + in_quotes(r.name) + ": ";
  auto at = [&](const char* key) -> const toml::source_region& {
    return t.get(key) ? t.get(key)->source() : t.source();
  };
  auto not_for = [&](const char* key, const char* why) {
    if (t.get(key))
      p.add(at(key), who + key + " does not apply to condition = \"" +
                         std::string(alert::to_string(r.condition)) + "\" (" + why + ")");
  };
  if (!t.get("name")) p.add(t.source(), "[[alert]] needs a name");
  if (!t.get("condition")) {
    p.add(t.source(), who +
                          "needs a condition (memory_ratio, ghost_memory, unattributed_memory, "
                          "finding or policy_action)");
    return;
  }
  const toml::node* above = t.get("above");
  switch (r.condition) {
    case Condition::MemoryRatio:
      if (!above)
        p.add(t.source(), who + "needs above, the used/total ratio, e.g. above = 0.95");
      else if (auto v = ratio(*above, p))
        r.ratio_above = *v;
      break;
    case Condition::GhostMemory:
    case Condition::UnattributedMemory:
      if (!above)
        p.add(t.source(), who + "needs above, a size, e.g. above = \"1GiB\"");
      else if (auto v = config::read_byte_size(*above, "above", p))
        r.bytes_above = *v;
      break;
    case Condition::Finding:
      not_for("above", "a finding is present or not");
      if (!r.finding_code && !r.finding_severity)
        p.add(t.source(), who + "needs code, min_severity or both");
      break;
    case Condition::PolicyAction:
      not_for("above", "it fires once per action");
      not_for("for", "it fires once per action");
      not_for("gpu", "it fires for every action of the policy");
      break;
  }
  if (r.condition != Condition::Finding) {
    not_for("code", "it is for condition = \"finding\"");
    not_for("min_severity", "it is for condition = \"finding\"");
  }
  if (r.condition != Condition::PolicyAction)
    not_for("policy", "it is for condition = \"policy_action\"");
}

const std::vector<Field<SinkConfig>>& sink_fields() {
  static const std::vector<Field<SinkConfig>> fields = {
      config::name_field<SinkConfig>(),
      {"type",
       [](const toml::node& node, SinkConfig& s, Problems& p) {
         if (auto type = config::read_choice(node, "type", alert::sink_type_from_string,
                                             alert::sink_type_names(", "), p))
           s.type = *type;
       }},
      {"url",
       [](const toml::node& node, SinkConfig& s, Problems& p) {
         // One URL, or (alertmanager: an HA pair) a list of them; check_sink says which.
         auto v = config::read_string_list(node, "url", false, p);
         if (!v) return;
         for (const auto& url : *v)
           if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0) {
             p.add(node, "url must start with http:// or https://");
             return;
           }
         s.urls = *v;
         s.url = s.urls.front();
       }},
      {"command",
       [](const toml::node& node, SinkConfig& s, Problems& p) {
         // One string is a shell command line, as a user types it; a list is the program and
         // its arguments, run without a shell.
         if (node.is_string()) {
           if (auto line = config::read_nonempty_string(node, "command", p))
             s.command = {"/bin/sh", "-c", *line};
           return;
         }
         auto v = config::read_string_list(node, "command", false, p);
         if (!v) return;
         if (v->front().empty() || v->front().front() != '/')
           p.add(node,
                 "command: the program must be an absolute path (the daemon has a minimal "
                 "PATH), e.g. [\"/usr/local/bin/page\", \"--team\", \"gpu\"], or one string "
                 "for the shell");
         else
           s.command = *v;
       }},
      {"timeout",
       [](const toml::node& node, SinkConfig& s, Problems& p) {
         if (auto d = config::read_duration(node, "timeout", 100ms, 5min, p)) s.timeout = *d;
       }},
      {"retries",
       [](const toml::node& node, SinkConfig& s, Problems& p) {
         if (auto v = config::read_integer(node, "retries", 0, 20, p))
           s.retries = static_cast<unsigned>(*v);
       }},
      {"retry_backoff",
       [](const toml::node& node, SinkConfig& s, Problems& p) {
         if (auto d = config::read_duration(node, "retry_backoff", 100ms, 1h, p))
           s.retry_backoff = *d;
       }},
  };
  return fields;
}

void check_sink(const toml::table& t, const SinkConfig& s, Problems& p) {
  std::string who = "sink " + in_quotes(s.name) + ": ";
  if (!t.get("name")) p.add(t.source(), "[[sink]] needs a name");
  if (!t.get("type")) {
    p.add(t.source(), who + "needs a type (" + alert::sink_type_names(" or ") + ")");
    return;
  }
  const auto& kind = alert::sink_kind(s.type);
  bool exec = kind.target == alert::SinkTarget::Command;
  if (exec && t.get("url"))
    p.add(t.get("url")->source(), who + "an exec sink runs command; url is for " +
                                      alert::sink_type_names(" and ", [](const alert::SinkKind& k) {
                                        return k.target != alert::SinkTarget::Command;
                                      }));
  if (!exec && t.get("command"))
    p.add(t.get("command")->source(), who + "command is for type = \"exec\"");
  if (exec && !t.get("command"))
    p.add(t.source(), who + "needs command, e.g. [\"/usr/local/bin/page\"]");
  if (!exec && !t.get("url")) p.add(t.source(), who + "needs url");
  if (s.urls.size() > 1 && kind.target != alert::SinkTarget::Urls)
    p.add(t.get("url")->source(),
          who + "a list of urls is for type = \"alertmanager\" (an HA pair); give one url");
}

// Each table of an array, with the parsed item at the same position.
template <class T, class F>
void for_each_table(const toml::table& root, const char* key, const std::vector<T>& items,
                    F check) {
  const auto* array = root.get(key) ? root.get(key)->as_array() : nullptr;
  if (!array) return;
  for (size_t i = 0; i < array->size() && i < items.size(); ++i)
    if (const auto* t = (*array)[i].as_table()) check(*t, items[i]);
}

template <class T>
void check_unique(const toml::table& root, const char* key, const std::vector<T>& items,
                  Problems& p) {
  std::set<std::string> seen;
  for_each_table(root, key, items, [&](const toml::table& t, const T& item) {
    if (!item.name.empty() && !seen.insert(item.name).second)
      p.add(t.source(),
            "another [[" + std::string(key) + "]] is already named " + in_quotes(item.name));
  });
}

}  // namespace

void read_alerts(const toml::node& node, DaemonConfig& c, Problems& p) {
  for (const toml::table* t : config::tables_of(node, "alert", p)) {
    Rule r;
    r.line = static_cast<unsigned>(t->source().begin.line);
    config::read_fields(*t, alert_fields(), r, p, "[[alert]] ");
    check_alert(*t, r, p);
    c.alerts.push_back(std::move(r));
  }
}

void read_sinks(const toml::node& node, DaemonConfig& c, Problems& p) {
  for (const toml::table* t : config::tables_of(node, "sink", p)) {
    SinkConfig s;
    s.line = static_cast<unsigned>(t->source().begin.line);
    config::read_fields(*t, sink_fields(), s, p, "[[sink]] ");
    check_sink(*t, s, p);
    c.sinks.push_back(std::move(s));
  }
}

void check_references(const toml::table& root, const DaemonConfig& c, Problems& p) {
  check_policies(root, c, p);
  check_unique(root, "policy", c.policies, p);
  check_unique(root, "alert", c.alerts, p);
  check_unique(root, "sink", c.sinks, p);
  for_each_table(root, "alert", c.alerts, [&](const toml::table& t, const Rule& r) {
    auto where = [&](const char* key) -> const toml::source_region& {
      return t.get(key) ? t.get(key)->source() : t.source();
    };
    for (const auto& name : r.sinks)
      if (std::none_of(c.sinks.begin(), c.sinks.end(),
                       [&](const SinkConfig& s) { return s.name == name; }))
        p.add(where("sinks"),
              "alert " + in_quotes(r.name) + ": no [[sink]] is named " + in_quotes(name));
    if (c.sinks.empty())
      p.add(t.source(), "alert " + in_quotes(r.name) + " has nowhere to go: add a [[sink]]");
    if (r.policy && std::none_of(c.policies.begin(), c.policies.end(),
                                 [&](const policy::Policy& pol) { return pol.name == *r.policy; }))
      p.add(where("policy"),
            "alert " + in_quotes(r.name) + ": no [[policy]] is named " + in_quotes(*r.policy));
  });
}

}  // namespace gpureap::daemon

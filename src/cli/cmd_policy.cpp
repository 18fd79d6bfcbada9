// `gpureap policy test`: evaluates the cleanup policies of a daemon config against one
// snapshot of this machine, and shows what each would match and why (or why not).
#include "cli/cmd_policy.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <iostream>
#include <optional>

#include "cli/daemon_client.h"
#include "core/duration.h"
#include "core/gpu_resolve.h"
#include "daemon/config.h"
#include "output/snapshot_json.h"
#include "output/table.h"
#include "output/view_incomplete.h"
#include "policy/exemption.h"
#include "policy/matcher.h"
#include "text/byte_format.h"
#include "text/display_width.h"
#include "text/escape.h"

namespace gpureap::cli {
namespace {

using policy::Evaluation;
using policy::Policy;

std::string status_of(const Evaluation& e) {
  if (e.exempt) return "exempt";
  if (e.matched()) return "matches";
  if (e.possible()) return "may-match";
  return "no-match";
}

std::string process_name(const core::Snapshot& s, pid_t pid) {
  const auto* row = s.row(pid);
  if (!row) return "?";
  if (row->process) return row->process->stat.comm;
  return row->driver_name.value_or("?") + " (gone)";
}

std::string user_of(const core::Snapshot& s, pid_t pid) {
  const auto* row = s.row(pid);
  if (!row || !row->process || !row->process->details) return "-";
  const auto& d = *row->process->details;
  return d.user ? *d.user : d.uid ? std::to_string(*d.uid) : "-";
}

std::string gpus_text(const std::vector<unsigned>& gpus) {
  std::string out;
  for (unsigned g : gpus) out += (out.empty() ? "" : ",") + std::to_string(g);
  return out.empty() ? "-" : out;
}

std::string joined(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

std::string what_it_does(const Policy& p, bool enforce) {
  std::string action(policy::to_string(p.action));
  if (p.action == policy::Action::Terminate)
    action += " (SIGTERM, SIGKILL after " + core::format_duration(p.grace) + ")";
  std::string when = p.after.count()
                         ? " once the match has held for " + core::format_duration(p.after)
                         : " at once";
  if (p.action != policy::Action::Notify && !enforce)
    return "would " + action + when + " (enforce is off: only logged)";
  return action + when;
}

// Each line of `text` wrapped to the width, the lines after the first indented by `indent`.
std::string wrapped(const std::string& text, std::optional<size_t> width, size_t indent = 0) {
  std::string out = output::wrap_text(text, width);
  if (indent == 0) return out;
  std::string hanging;
  for (size_t i = 0; i < out.size();) {
    size_t end = out.find('\n', i);
    if (i > 0 && end > i) hanging += std::string(indent, ' ');
    hanging += out.substr(i, end - i + 1);
    i = end + 1;
  }
  return hanging;
}

void print_policy(std::ostream& out, const Policy& p, const std::vector<Evaluation>& evals,
                  const core::Snapshot& s, bool enforce, const output::Style& style,
                  std::optional<size_t> width) {
  out << output::wrap_text("policy " + text::terminal_safe(p.name) + " (line " +
                               std::to_string(p.line) + "): " + what_it_does(p, enforce),
                           width);
  struct Match {
    std::vector<output::Cell> cells;
    output::Cell why;
  };
  std::vector<Match> found;
  std::vector<std::string> others;
  for (const auto& e : evals) {
    std::string name = text::terminal_safe(process_name(s, e.pid));
    if (e.matched() || e.possible()) {
      std::string why = joined(e.reasons(), "; ");
      for (const auto& c : e.checks)
        if (c.verdict == policy::Verdict::Unknown)
          why += (why.empty() ? "" : "; ") + ("to be seen: " + c.detail);
      found.push_back(
          {{{std::to_string(e.pid)},
            {text::terminal_safe(user_of(s, e.pid))},
            {name},
            {gpus_text(e.gpus)},
            {e.memory_bytes ? text::human_bytes(*e.memory_bytes) : "-"}},
           {text::terminal_safe(why), e.matched() ? output::Color::Red : output::Color::Yellow}});
    } else if (e.exempt) {
      others.push_back(std::to_string(e.pid) + " " + name + ": exempt, " + *e.exempt);
    } else if (const auto* c = e.failed()) {
      others.push_back(std::to_string(e.pid) + " " + name + ": " + text::terminal_safe(c->detail));
    }
  }
  if (found.empty()) out << "  matches nothing now\n";
  // WHY is the last column while the widest fits the width; else each goes on a line under its
  // row, wrapped, as the kill plan's "why:" does.
  std::vector<std::string> headers = {"PID", "USER", "COMMAND", "GPU", "MEMORY", "WHY"};
  size_t inline_width = 0;
  for (size_t c = 0; c < headers.size(); ++c) {
    size_t w = text::text_width(headers[c]);
    for (const auto& m : found)
      w = std::max(w, text::text_width(c < m.cells.size() ? m.cells[c].text : m.why.text));
    inline_width += w + (c + 1 < headers.size() ? 2 : 0);
  }
  const bool why_inline = !width || inline_width <= *width;
  if (!why_inline) headers.pop_back();
  output::Table matches(headers);
  for (auto& m : found) {
    if (why_inline) {
      m.cells.push_back(m.why);
      matches.add(std::move(m.cells));
    } else {
      matches.add(std::move(m.cells));
      matches.add_note(1, {"why: " + m.why.text, m.why.color});
    }
  }
  if (!found.empty()) out << matches.render(style, width);
  for (const auto& line : others) out << wrapped("  not matched: " + line, width, 4);
  out << "\n";
}

// Where the daemon answers how long each match has held. A listen port of 0 is any free port:
// the daemon's log names the one it got.
std::string policies_endpoint_line(const exporter::ListenAddress& listen) {
  const std::string url = "http://" + text::terminal_safe(listen.text()) + "/api/v1/policies";
  if (listen.port == 0)
    return "This is one snapshot: how long each match has held, and when the daemon will act, "
           "is in its /api/v1/policies, on the port its log names at start (listen = \"" +
           text::terminal_safe(listen.text()) + "\" takes any free port).";
  return "This is one snapshot: how long each match has held, and when the daemon will act, is "
         "in its /api/v1/policies: `curl -s " +
         url + "`.";
}

nlohmann::json policy_json(const Policy& p, const std::vector<Evaluation>& evals,
                           const core::Snapshot& s) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& e : evals) {
    nlohmann::json checks = nlohmann::json::array();
    for (const auto& c : e.checks)
      checks.push_back({{"condition", c.condition},
                        {"verdict", c.verdict == policy::Verdict::Pass   ? "pass"
                                    : c.verdict == policy::Verdict::Fail ? "fail"
                                                                         : "unknown"},
                        {"detail", c.detail}});
    rows.push_back(
        {{"pid", e.pid},
         {"start_ticks", e.start_ticks ? nlohmann::json(*e.start_ticks) : nlohmann::json()},
         {"comm", process_name(s, e.pid)},
         {"status", status_of(e)},
         {"gpus", e.gpus},
         {"memory_bytes", e.memory_bytes ? nlohmann::json(*e.memory_bytes) : nlohmann::json()},
         {"exempt", e.exempt ? nlohmann::json(*e.exempt) : nlohmann::json()},
         {"checks", checks}});
  }
  return {{"name", p.name},
          {"line", p.line},
          {"action", policy::to_string(p.action)},
          {"after_seconds", core::seconds(p.after)},
          {"processes", rows}};
}

}  // namespace

CLI::App* add_policy_command(CLI::App& app, PolicyOptions& o) {
  auto* cmd = app.add_subcommand("policy", "cleanup policies of the daemon's config");
  cmd->require_subcommand(1);
  auto* test = cmd->add_subcommand(
      "test",
      "show what each policy would match on this machine now, and why (nothing is signalled)");
  test->add_option("--config", o.config, "the daemon's config file")
      ->default_str(daemon::kDefaultConfigPath);
  test->add_option("--policy", o.name, "only the policy with this name");
  return cmd;
}

int run_policy(const GlobalOptions& g, const PolicyOptions& o) {
  if (g.csv) return fail({"gpureap policy test has no CSV output", "use --json"});
  const std::string path = o.config.empty() ? daemon::kDefaultConfigPath : o.config;
  if (::access(path.c_str(), F_OK) != 0 && errno == ENOENT)
    return fail({"no config file at " + path,
                 "policies are [[policy]] tables of the daemon's config (docs/config.md); pass "
                 "--config FILE"});
  auto config = daemon::load_config(path);
  if (!config) {
    std::cerr << text::terminal_safe_lines(config.error().message) << "\n";
    if (!config.error().hint.empty())
      std::cerr << "  " << text::terminal_safe_lines(config.error().hint) << "\n";
    return kExitUsage;
  }
  std::vector<Policy> policies;
  for (const auto& p : config->policies)
    if (!o.name || p.name == *o.name) policies.push_back(p);
  if (o.name && policies.empty())
    return fail({"no policy named " + text::terminal_safe(*o.name) + " in " + path,
                 "gpureap policy test --config " + path + " lists them all"});
  auto collector = open_collector(g);
  if (!collector) return fail(collector.error());
  // A policy in the daemon matches with its sightings of the driver's lists: so does its test.
  adopt_daemon_sightings(*collector, ask_daemon_sightings(g, false));
  const core::Snapshot snapshot = collector->collect();
  for (const auto& p : policies)
    if (p.gpu)
      if (auto unknown = core::resolve_gpu(snapshot, std::to_string(*p.gpu)).problem) {
        unknown->error.message = "policy " + p.name + " (line " + std::to_string(p.line) +
                                 "): " + unknown->error.message;
        return fail_scope(*unknown);
      }
  // One snapshot has no history: `idle` is judged from the utilisation now, and `after` is
  // the daemon's to time.
  policy::MatchContext context{snapshot, snapshot.timestamp, nullptr,
                               policy::exemption_for(snapshot)};

  if (g.json) {
    nlohmann::json doc{{"schema", "gpureap.policy-test/v1"},
                       {"config", path},
                       {"enforce", config->enforce},
                       {"complete", snapshot.complete()},
                       {"policies", nlohmann::json::array()}};
    for (const auto& p : policies)
      doc["policies"].push_back(policy_json(p, policy::evaluate(p, context), snapshot));
    std::cout << output::dump_json(doc) << "\n";
    return kExitOk;
  }
  auto style = output::Style::for_stdout(g.no_color);
  const auto width = output::fit_width(terminal_width(), std::getenv("COLUMNS"));
  std::cout << output::wrap_text(
      "Policies in " + text::terminal_safe(path) + ": enforce is " +
          (config->enforce ? "on: matching processes are ended"
                           : "off: actions are only logged as \"would\""),
      width);
  if (const auto* down = snapshot.drivers.first_down(); down && !snapshot.drivers.any_available())
    std::cout << output::wrap_text(
        "The GPU driver is not available (" + text::terminal_safe(down->error.value_or("unknown")) +
            "): only device-file holders are shown, and memory conditions cannot match.",
        width);
  if (!snapshot.complete())
    std::cout << output::wrap_text(
        "The view is incomplete: " + text::terminal_safe(output::incomplete_reason(snapshot)) +
            " (the daemon, as root, sees what this view lacks).",
        width);
  if (policies.empty()) std::cout << "No [[policy]] tables.\n";
  std::cout << "\n";
  for (const auto& p : policies)
    print_policy(std::cout, p, policy::evaluate(p, context), snapshot, config->enforce, style,
                 width);
  if (!policies.empty())
    std::cout << output::wrap_text(policies_endpoint_line(config->listen), width);
  return kExitOk;
}

}  // namespace gpureap::cli

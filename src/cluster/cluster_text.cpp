#include "cluster/cluster_text.h"

#include <algorithm>
#include <chrono>

#include "backend/registry.h"
#include "core/field_count.h"
#include "output/table.h"
#include "text/byte_format.h"
#include "text/escape.h"
#include "text/plural.h"
#include "text/time_format.h"

namespace gpureap::cluster {
namespace {

using nlohmann::json;

std::string safe(const std::string& s) {
  return text::terminal_safe(s);
}

std::string age(double seconds) {
  if (!(seconds > 0)) seconds = 0;
  return text::human_age(std::chrono::seconds(static_cast<long long>(std::min(seconds, 1e9))));
}

std::string pid_list(const std::vector<pid_t>& pids, size_t more) {
  std::string out;
  for (pid_t p : pids) out += (out.empty() ? "" : ", ") + std::to_string(p);
  if (more) out += " (+" + std::to_string(more) + " more)";
  return out;
}

std::string process_piece(const ProblemProcess& p) {
  std::string who;
  if (!p.comm.empty()) who = safe(p.comm);
  if (!p.user.empty() && p.problem != "ghost") who += (who.empty() ? "" : ", ") + safe(p.user);
  std::string out;
  if (p.problem == "uninterruptible")
    out = "D-state";
  else
    out = p.problem;
  out += " PID " + std::to_string(p.pid);
  if (!who.empty()) out += " (" + who + ")";
  out += ": " + text::human_bytes(p.bytes);
  if (p.problem == "ghost")
    out += p.keepers.empty() ? " kept by other processes"
                             : " kept by " + pid_list(p.keepers, p.more_keepers);
  if (p.problem == "leaked") out += ", nothing holds it";
  if (!p.pod_name.empty())
    out += " in pod " + (p.pod_namespace.empty() ? "" : safe(p.pod_namespace) + "/") +
           safe(p.pod_name);
  return out;
}

std::string error_piece(const GpuErrorSeen& x, double now) {
  return safe(backend::kernel_kind_label(x.kind)) + " " + std::to_string(x.code) + " " +
         age(now - x.time) + " ago" + (x.pci_bus_id.empty() ? "" : " (" + safe(x.pci_bus_id) + ")");
}

// The fields of the view the gpureap.cluster/v1 document writes: a field added to one of these
// stops the build here until it is written (or said to be left out, as a Node is: the lines
// name it).
template <class T, std::size_t N>
constexpr bool written = core::field_count<T>() == N;
static_assert(written<ProblemProcess, 9>, "a ProblemProcess field is not in the document");
static_assert(written<GpuErrorSeen, 4>, "a GpuErrorSeen field is not in the document");
static_assert(written<Line, 11>, "a Line field is not in the document");
static_assert(written<SplitJob, 5> && written<SplitJob::GoneOn, 2> && written<SplitJob::HeldOn, 5>,
              "a SplitJob field is not in the document");
static_assert(written<Healthy, 4>, "a Healthy field is not in the document");
static_assert(written<ClusterView, 7>, "a ClusterView field is not in the document");

json process_json(const ProblemProcess& p) {
  return {{"pid", p.pid},
          {"problem", p.problem},
          {"bytes", p.bytes},
          {"keepers", p.keepers},
          {"more_keepers", p.more_keepers},
          {"comm", text::utf8_valid(p.comm)},
          {"user", text::utf8_valid(p.user)},
          {"pod_namespace", text::utf8_valid(p.pod_namespace)},
          {"pod_name", text::utf8_valid(p.pod_name)}};
}

template <class T>
json optional_json(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

json split_job_json(const ClusterView& view, const SplitJob& job) {
  json gone = json::array(), held = json::array();
  for (const auto& g : job.gone_on)
    gone.push_back({{"node", text::utf8_valid(view.nodes[g.node].name)},
                    {"instance", text::utf8_valid(view.nodes[g.node].instance)},
                    {"ranks", g.ranks}});
  for (const auto& h : job.held_on) {
    auto command = command_text(h.command);
    held.push_back({{"node", text::utf8_valid(view.nodes[h.node].name)},
                    {"instance", text::utf8_valid(view.nodes[h.node].instance)},
                    {"ranks", h.ranks},
                    {"bytes", h.bytes},
                    {"command", command.empty() ? json(nullptr) : json(text::utf8_valid(command))},
                    {"command_note", text::utf8_valid(h.command_note)}});
  }
  return {{"run_id", text::utf8_valid(job.run_id)},
          {"user", text::utf8_valid(job.user)},
          {"held_bytes", job.held_bytes},
          {"gone_on", gone},
          {"held_on", held},
          {"summary", text::utf8_valid(describe_split_job(view, job))}};
}

}  // namespace

std::string describe_split_job(const ClusterView& view, const SplitJob& job) {
  std::string gone;
  for (const auto& g : job.gone_on)
    gone += (gone.empty() ? "" : ", ") + text::plural(g.ranks, "rank") + " gone on " +
            safe(view.nodes[g.node].label);
  std::string held;
  for (const auto& h : job.held_on)
    held += (held.empty() ? "" : "; ") + safe(view.nodes[h.node].label) + "'s " +
            text::plural(h.ranks, "rank") + " still hold " + text::human_bytes(h.bytes);
  return "job " + safe(job.run_id) + " (" + safe(job.user) + "): " + gone + "; " + held;
}

std::string describe(const ClusterView& view, const Line& line) {
  std::vector<std::string> pieces;
  const auto& node = view.nodes[line.node];
  if (line.state == "down") pieces.push_back("down: Prometheus cannot scrape its daemon (up == 0)");
  if (line.state == "missing")
    pieces.push_back("missing: Prometheus scraped it in the last hour, not now");
  if (line.state == "stale")
    pieces.push_back("stale: the daemon's last sample is " + age(line.stale_seconds) + " old");
  if (line.state == "driver-down")
    pieces.push_back("driver down: no GPU driver answers the daemon (gpureap_up == 0)");
  for (const auto& p : line.processes) pieces.push_back(process_piece(p));
  if (line.ghost_unnamed)
    pieces.push_back("ghost " + text::human_bytes(*line.ghost_unnamed) +
                     " (its daemon exports no PIDs: an older gpureap)");
  if (line.unattributed)
    pieces.push_back("unattributed " + text::human_bytes(*line.unattributed) +
                     " that no listed process holds");
  for (const auto& x : line.errors) pieces.push_back(error_piece(x, view.time));
  (void)node;
  std::string out;
  for (const auto& p : pieces) out += (out.empty() ? "" : "; ") + p;
  return out;
}

std::string command_text(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : " ") + text::shell_quote(w);
  return out;
}

std::string command_text(const Line& line) {
  return command_text(line.command);
}

std::string render_text(const ClusterView& view, const output::Style& style,
                        std::optional<size_t> width) {
  std::string out;
  if (!view.lines.empty()) {
    output::Table table({"NODE", "GPU", "AT STAKE", "PROBLEM"});
    for (const auto& line : view.lines) {
      const auto& node = view.nodes[line.node];
      const bool node_wide = !line.state.empty();
      table.add({{safe(node.label), output::Color::Bold},
                 {line.gpu ? std::to_string(*line.gpu) : "-"},
                 {line.at_stake && *line.at_stake ? text::human_bytes(*line.at_stake) : "-"},
                 {describe(view, line), node_wide || (line.at_stake && *line.at_stake)
                                            ? output::Color::Red
                                            : output::Color::Yellow}});
      auto command = command_text(line);
      table.add_note(1,
                     {command.empty() ? line.command_note : "run: " + command, output::Color::Dim});
    }
    out += table.render(style, width);
    // Said once, so no one reads the pointer as the view not knowing the problems it names.
    if (std::any_of(view.lines.begin(), view.lines.end(),
                    [](const Line& l) { return l.gpu && !l.command.empty(); }))
      out +=
          "Doctor on the node names each problem's remedy: it needs the node's process tree, "
          "which Prometheus does not hold.\n";
  }
  if (!view.split_jobs.empty()) {
    out +=
        "Jobs split across nodes (joined on the run id and user their launchers carry, a "
        "label the user sets: check it on the node before acting):\n";
    for (const auto& job : view.split_jobs) {
      out += style.paint(describe_split_job(view, job), output::Color::Red) + "\n";
      for (const auto& h : job.held_on) {
        auto command = command_text(h.command);
        out += style.paint(
                   "  " + (command.empty() ? safe(view.nodes[h.node].label) + ": " + h.command_note
                                           : "run: " + command),
                   output::Color::Dim) +
               "\n";
      }
    }
  }
  const auto& h = view.healthy;
  if (h.nodes > 0) {
    out += text::plural(h.nodes, "node") + " healthy: " + text::plural(h.gpus, "GPU");
    if (h.total > 0)
      out += ", " + text::human_bytes(h.used) + " of " + text::human_bytes(h.total) + " used";
    out += ".\n";
  } else if (view.lines.empty() && view.split_jobs.empty()) {
    out += view.nodes.empty() ? "Prometheus has no gpureap node.\n" : "Nothing to show.\n";
  }
  if (view.skipped_series > 0)
    out += "(" + std::to_string(view.skipped_series) + " series" +
           " of Prometheus's answer skipped: malformed values or labels)\n";
  for (const auto& w : view.warnings) out += "Prometheus warns: " + safe(w) + "\n";
  return out;
}

json to_json(const ClusterView& view, const std::string& prometheus, const ViewSettings& settings) {
  json lines = json::array();
  for (const auto& line : view.lines) {
    const auto& node = view.nodes[line.node];
    json processes = json::array();
    for (const auto& p : line.processes) processes.push_back(process_json(p));
    // "xids" and "xid" as 0.1 named them (NVIDIA's), each error's kind beside its code.
    json errors = json::array();
    for (const auto& x : line.errors)
      errors.push_back({{"xid", x.code},
                        {"kind", text::utf8_valid(x.kind)},
                        {"time", x.time},
                        {"pci_bus_id", text::utf8_valid(x.pci_bus_id)}});
    auto command = command_text(line);
    lines.push_back(
        {{"node", text::utf8_valid(node.name)},
         {"instance", text::utf8_valid(node.instance)},
         {"kubernetes", node.kubernetes},
         {"gpu", optional_json(line.gpu)},
         {"state", line.state.empty() ? json(nullptr) : json(line.state)},
         {"at_stake_bytes", optional_json(line.at_stake)},
         {"processes", processes},
         {"ghost_unnamed_bytes", optional_json(line.ghost_unnamed)},
         {"unattributed_bytes", optional_json(line.unattributed)},
         {"xids", errors},
         {"stale_seconds", line.state == "stale" ? json(line.stale_seconds) : json(nullptr)},
         {"summary", text::utf8_valid(describe(view, line))},
         {"command", command.empty() ? json(nullptr) : json(text::utf8_valid(command))},
         {"command_note", text::utf8_valid(line.command_note)},
         {"argv", line.command.empty() ? json(nullptr) : [&] {
            json a = json::array();
            for (const auto& w : line.command) a.push_back(text::utf8_valid(w));
            return a;
          }()}});
  }
  return {{"schema", "gpureap.cluster/v1"},
          {"prometheus", text::utf8_valid(prometheus)},
          {"job", text::utf8_valid(settings.job)},
          {"time", view.time},
          {"nodes", view.nodes.size()},
          {"lines", lines},
          {"split_jobs",
           [&] {
             json jobs = json::array();
             for (const auto& job : view.split_jobs) jobs.push_back(split_job_json(view, job));
             return jobs;
           }()},
          {"healthy",
           {{"nodes", view.healthy.nodes},
            {"gpus", view.healthy.gpus},
            {"used_bytes", view.healthy.used},
            {"total_bytes", view.healthy.total}}},
          {"skipped_series", view.skipped_series},
          {"warnings", [&] {
             json w = json::array();
             for (const auto& x : view.warnings) w.push_back(text::utf8_valid(x));
             return w;
           }()}};
}

}  // namespace gpureap::cluster

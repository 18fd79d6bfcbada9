#include "alert/observe.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "text/byte_format.h"

namespace gpureap::alert {
namespace {

std::string gpu_list(const std::vector<unsigned>& gpus) {
  return fmt::format("{}", fmt::join(gpus, ","));
}

// "GPU 0 (<its name>)": how a description names a GPU.
std::string gpu_name(const core::Gpu& g) {
  return g.name ? fmt::format("GPU {} ({})", g.index, *g.name) : fmt::format("GPU {}", g.index);
}

Observation gpu_instance(const Rule& rule, const core::Gpu& g, const std::string& hostname) {
  Observation o;
  o.key = fmt::format("gpu={}", g.index);
  o.labels = base_labels(rule, hostname);
  o.labels["gpu"] = std::to_string(g.index);
  if (g.uuid) o.labels["gpu_uuid"] = *g.uuid;
  o.generator_path = fmt::format("api/v1/history?gpu={}", g.index);
  return o;
}

// Holds when known and above; the description says which side of the threshold it is on.
Holds compare(const std::optional<double>& value, double above) {
  if (!value) return Holds::Unknown;
  return *value > above ? Holds::Yes : Holds::No;
}

void memory_ratio(const Rule& rule, const core::Gpu& g, const std::string& host, Observation& o) {
  const auto& m = g.memory;
  std::optional<double> ratio;
  if (!g.error && m.total_bytes && *m.total_bytes > 0 && m.used_bytes)
    ratio = static_cast<double>(*m.used_bytes) / static_cast<double>(*m.total_bytes);
  o.holds = compare(ratio, rule.ratio_above);
  if (!ratio) return;
  o.annotations["summary"] =
      fmt::format("GPU {} memory {} used ({} of {})", g.index, percent(*ratio),
                  text::human_bytes(*m.used_bytes), text::human_bytes(*m.total_bytes));
  o.annotations["description"] =
      o.holds == Holds::Yes
          ? fmt::format(
                "{} on {} has {} of {} in use, above the rule's {}. `gpureap` shows who "
                "holds it; `gpureap doctor` finds memory held for nobody.",
                gpu_name(g), host, text::human_bytes(*m.used_bytes),
                text::human_bytes(*m.total_bytes), percent(rule.ratio_above))
          : fmt::format("{} on {} has {} of {} in use, no longer above {}.", gpu_name(g), host,
                        text::human_bytes(*m.used_bytes), text::human_bytes(*m.total_bytes),
                        percent(rule.ratio_above));
}

// Doctor's remedy for the gone PIDs' memory on GPU `gpu`, from its findings: the first step of
// each ("gpureap kill 4242", the reset of a leak), never a command composed here.
std::string ghost_remedies(const std::vector<doctor::Finding>& findings, unsigned gpu) {
  std::vector<std::string> steps;
  for (const auto& f : findings) {
    bool ghost =
        f.has(doctor::FindingCode::NoSuchProcess) || f.has(doctor::FindingCode::LeakedMemory);
    if (!ghost || f.remedy.empty() || std::find(f.gpus.begin(), f.gpus.end(), gpu) == f.gpus.end())
      continue;
    auto line = "`" + f.remedy.front().line() + "`";
    if (std::find(steps.begin(), steps.end(), line) == steps.end()) steps.push_back(line);
  }
  if (steps.empty()) return fmt::format("`gpureap doctor --gpu {}` names what frees it.", gpu);
  return fmt::format("`gpureap doctor --gpu {}` explains; its remedies: {}.", gpu,
                     fmt::join(steps, "; "));
}

void ghost_memory(const Rule& rule, const sample::Sample& sample, const core::Gpu& g,
                  const std::string& host, Observation& o) {
  const core::Snapshot& s = *sample.snapshot;
  // Without trustworthy process lists nobody can say what is a ghost's.
  if (g.error || g.processes_error) {
    o.holds = Holds::Unknown;
    return;
  }
  uint64_t ghost = s.memory_summary(g).ghost_bytes;
  o.holds = ghost > rule.bytes_above ? Holds::Yes : Holds::No;
  o.annotations["summary"] =
      fmt::format("GPU {}: {} held for processes that are gone", g.index, text::human_bytes(ghost));
  o.annotations["description"] =
      o.holds == Holds::Yes
          ? fmt::format(
                "{} on {} has {} listed for gone processes or kept alive by the processes "
                "that inherited their device files, above the rule's {}. {}",
                gpu_name(g), host, text::human_bytes(ghost), text::human_bytes(rule.bytes_above),
                ghost_remedies(sample.findings, g.index))
          : fmt::format("{} on {} has {} held for gone processes, no longer above {}.", gpu_name(g),
                        host, text::human_bytes(ghost), text::human_bytes(rule.bytes_above));
}

void unattributed_memory(const Rule& rule, const core::Snapshot& s, const core::Gpu& g,
                         const std::string& host, Observation& o) {
  std::optional<uint64_t> bytes;
  if (!g.error && !g.processes_error) bytes = s.memory_summary(g).unattributed_bytes;
  if (!bytes) {
    o.holds = Holds::Unknown;
    return;
  }
  o.holds = *bytes > rule.bytes_above ? Holds::Yes : Holds::No;
  o.annotations["summary"] =
      fmt::format("GPU {}: {} in use by no listed process", g.index, text::human_bytes(*bytes));
  o.annotations["description"] =
      o.holds == Holds::Yes
          ? fmt::format(
                "{} on {} has {} in use that the driver attributes to no process, above "
                "the rule's {}: a context being torn down, or leaked. `gpureap doctor` "
                "tells which and what frees it.",
                gpu_name(g), host, text::human_bytes(*bytes), text::human_bytes(rule.bytes_above))
          : fmt::format("{} on {} has {} attributed to no process, no longer above {}.",
                        gpu_name(g), host, text::human_bytes(*bytes),
                        text::human_bytes(rule.bytes_above));
}

Observations memory(const Rule& rule, const sample::Sample& sample, const std::string& host) {
  Observations out;
  const auto& snap = *sample.snapshot;
  if (!snap.drivers.any_available()) {
    out.all_unknown = true;
    return out;
  }
  for (const auto& g : snap.drivers.gpus) {
    if (rule.gpu && *rule.gpu != g.index) continue;
    Observation o = gpu_instance(rule, g, host);
    switch (rule.condition) {
      case Condition::MemoryRatio:
        memory_ratio(rule, g, host, o);
        break;
      case Condition::GhostMemory:
        ghost_memory(rule, sample, g, host, o);
        break;
      case Condition::UnattributedMemory:
        unattributed_memory(rule, snap, g, host, o);
        break;
      case Condition::Finding:  // not a memory condition: observe() never sends it here
      case Condition::PolicyAction:
        break;
    }
    out.items.push_back(std::move(o));
  }
  return out;
}

bool matches(const Rule& rule, const doctor::Finding& f) {
  // A rule on a code matches the finding that carries it, as its own or a facet's (a keeper
  // that is an orphan is a facet of its ghost's finding).
  if (rule.finding_code && !f.has(*rule.finding_code)) return false;
  if (rule.finding_severity && f.severity < *rule.finding_severity) return false;
  return !rule.gpu || std::find(f.gpus.begin(), f.gpus.end(), *rule.gpu) != f.gpus.end();
}

std::string finding_text(const doctor::Finding& f) {
  std::string text = f.explanation;
  if (!f.evidence.empty()) text += fmt::format(" Evidence: {}.", fmt::join(f.evidence, "; "));
  std::vector<std::string> steps;
  for (const auto& s : f.remedy)
    steps.push_back((steps.empty() ? "" : std::string(doctor::to_string(s.kind)) + ": ") +
                    s.line());
  if (!steps.empty()) text += fmt::format(" Fix: {}", fmt::join(steps, " ; "));
  return text;
}

// Findings of one code on one set of GPUs are one alert: several gone PIDs on GPU 0 are one
// problem of that GPU, and their number changing does not make it a new alert.
Observations findings(const Rule& rule, const sample::Sample& sample, const std::string& host) {
  Observations out;
  if (sample.driver_timed_out) {
    out.all_unknown = true;  // the driver did not answer: what it lists is unknown
    return out;
  }
  std::map<std::string, std::vector<const doctor::Finding*>> groups;
  std::map<std::string, std::vector<unsigned>> gpus_of;
  for (const auto& f : sample.findings) {
    if (!matches(rule, f)) continue;
    std::vector<unsigned> gpus = f.gpus;
    std::sort(gpus.begin(), gpus.end());
    gpus.erase(std::unique(gpus.begin(), gpus.end()), gpus.end());
    // The code the rule names, so its alert keeps its identity whichever finding carries it.
    auto code = rule.finding_code.value_or(f.code);
    std::string key = "code=" + std::string(doctor::to_string(code)) +
                      (gpus.empty() ? "" : " gpu=" + gpu_list(gpus));
    groups[key].push_back(&f);
    gpus_of[key] = gpus;
  }
  for (const auto& [key, group] : groups) {
    const auto& first = *group.front();
    const auto& gpus = gpus_of[key];
    Observation o;
    o.key = key;
    o.holds = Holds::Yes;
    o.labels = base_labels(rule, host);
    o.labels["code"] = doctor::to_string(rule.finding_code.value_or(first.code));
    if (!gpus.empty()) o.labels["gpu"] = gpu_list(gpus);
    uint64_t bytes = 0;
    std::vector<pid_t> pids;
    std::vector<std::string> texts;
    for (const auto* f : group) {
      bytes += f->memory_bytes;
      pids.insert(pids.end(), f->pids.begin(), f->pids.end());
      texts.push_back(finding_text(*f));
    }
    std::string summary =
        fmt::format("{} ({})", doctor::to_string(rule.finding_code.value_or(first.code)),
                    doctor::to_string(first.severity));
    if (!gpus.empty()) summary += fmt::format(" on GPU {}", gpu_list(gpus));
    if (bytes > 0) summary += ", " + text::human_bytes(bytes);
    if (!pids.empty()) summary += fmt::format(", PID {}", fmt::join(pids, ", "));
    o.annotations["summary"] = summary;
    o.annotations["description"] = fmt::format("{}", fmt::join(texts, "\n"));
    o.generator_path = "api/v1/findings";
    out.items.push_back(std::move(o));
  }
  return out;
}

}  // namespace

std::string percent(double ratio) {
  double p = ratio * 100;
  std::string text = fmt::format("{:.1f}", p);
  if (text.size() > 2 && text.compare(text.size() - 2, 2, ".0") == 0) text.resize(text.size() - 2);
  return text + "%";
}

Labels base_labels(const Rule& rule, const std::string& hostname) {
  return {{"alertname", rule.name}, {"severity", rule.severity}, {"instance", hostname}};
}

Observations observe(const Rule& rule, const sample::Sample& sample, const std::string& hostname) {
  switch (rule.condition) {
    case Condition::MemoryRatio:
    case Condition::GhostMemory:
    case Condition::UnattributedMemory:
      return memory(rule, sample, hostname);
    case Condition::Finding:
      return findings(rule, sample, hostname);
    case Condition::PolicyAction:
      break;
  }
  return {};
}

}  // namespace gpureap::alert

#include "doctor/finding.h"

#include <algorithm>

#include "text/enum_names.h"

namespace gpureap::doctor {

const char* to_string(Severity s) {
  switch (s) {
    case Severity::Info:
      return "info";
    case Severity::Warning:
      return "warning";
    case Severity::Critical:
      return "critical";
  }
  return "";  // no enumerator: no name
}

std::optional<Severity> severity_from_string(std::string_view s) {
  return text::enum_from_name<Severity>(s);
}

const char* to_string(StepKind k) {
  switch (k) {
    case StepKind::Run:
      return "run";
    case StepKind::Or:
      return "or";
    case StepKind::Then:
      return "then";
  }
  return "";  // no enumerator: no name
}

RemedyStep::RemedyStep(std::string text) {
  auto hash = text.find("   # ");
  if (hash == std::string::npos) {
    command = std::move(text);
    return;
  }
  why = text.substr(hash + 5);
  text.resize(hash);
  while (!text.empty() && text.back() == ' ') text.pop_back();
  command = std::move(text);
}

RemedyStep step(StepKind kind, std::string text) {
  RemedyStep s(std::move(text));
  s.kind = kind;
  return s;
}

std::string RemedyStep::line() const {
  return why.empty() ? command : command + "   # " + why;
}

bool Finding::has(FindingCode c) const {
  return code == c ||
         std::any_of(facets.begin(), facets.end(), [&](const Facet& x) { return x.code == c; });
}

std::vector<FindingCode> Finding::codes() const {
  std::vector<FindingCode> out{code};
  for (const auto& x : facets)
    if (std::find(out.begin(), out.end(), x.code) == out.end()) out.push_back(x.code);
  return out;
}

void sort_findings(std::vector<Finding>& f) {
  std::stable_sort(f.begin(), f.end(), [](const Finding& a, const Finding& b) {
    if (a.severity != b.severity) return a.severity > b.severity;
    return a.memory_bytes > b.memory_bytes;
  });
}

Severity worst(const std::vector<Finding>& f) {
  Severity w = Severity::Info;
  for (const auto& x : f) w = std::max(w, x.severity);
  return w;
}

void keep_codes(std::vector<Finding>& f, const std::vector<FindingCode>& codes) {
  if (codes.empty()) return;
  std::erase_if(f, [&](const Finding& x) {
    return std::none_of(codes.begin(), codes.end(), [&](FindingCode c) { return x.has(c); });
  });
}

}  // namespace gpureap::doctor

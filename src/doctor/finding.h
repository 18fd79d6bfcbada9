#pragma once
// A finding of `gpureap doctor`: one problem, with the facts that show it, what it means and
// the steps that fix it. A problem several rules see (a gone PID, the worker that keeps its
// memory, that worker being an orphan) is one finding: the primary code says what the problem
// is, each other rule's code is a facet of it (a line about one process), so `--only`, alert
// rules and the metrics' `code` label still find every code.
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "doctor/finding_code.h"

namespace gpureap::doctor {

enum class Severity { Info, Warning, Critical };
const char* to_string(Severity s);
std::optional<Severity> severity_from_string(std::string_view s);

// How a remedy step follows the one before: the first is what to run; "or" is an
// alternative to the steps before it; "then" comes after them.
enum class StepKind { Run, Or, Then };
const char* to_string(StepKind k);

struct RemedyStep {
  StepKind kind = StepKind::Run;
  std::string command;  // a command to run, or an action in words
  std::string why;      // what it does, or when to take it
  RemedyStep() = default;
  RemedyStep(StepKind k, std::string c, std::string w = {})
      : kind(k), command(std::move(c)), why(std::move(w)) {}
  // "COMMAND   # WHY" (the comment is optional): the step's command and why.
  RemedyStep(std::string text);  // NOLINT(google-explicit-constructor): rules list commands
  RemedyStep(const char* text) : RemedyStep(std::string(text)) {}  // NOLINT
  // "COMMAND   # WHY", as one line of a shell.
  std::string line() const;
  bool operator==(const RemedyStep&) const = default;
};

// "COMMAND   # WHY" as a step of that kind.
RemedyStep step(StepKind kind, std::string text);

// Another rule's view of the same problem: its code, the process it is about (0: none), its
// severity on its own and one line that says it.
struct Facet {
  FindingCode code = FindingCode::DriverMissing;
  pid_t pid = 0;
  Severity severity = Severity::Info;
  std::string text;
  bool operator==(const Facet&) const = default;
};

struct Finding {
  FindingCode code = FindingCode::DriverMissing;
  Severity severity = Severity::Info;
  std::vector<unsigned> gpus;
  std::vector<pid_t> pids;
  uint64_t memory_bytes = 0;
  std::vector<std::string> evidence;
  std::string explanation;
  std::vector<RemedyStep> remedy;
  // One line that names the problem ("GPU 0: 8.0 GiB held by gone PID 4242 through 1 worker").
  std::string summary;
  std::vector<Facet> facets;
  // Evidence read from files only root can read: shown only where the reader could read them
  // too (doctor/restricted_evidence.h), never by a view that does not ask.
  std::vector<std::string> restricted_evidence;

  // The primary code or a facet's.
  bool has(FindingCode c) const;
  // The primary code, then the facets' codes, each once.
  std::vector<FindingCode> codes() const;
};

// Most severe first, then most memory first.
void sort_findings(std::vector<Finding>& findings);
Severity worst(const std::vector<Finding>& findings);
// --only: the findings that carry one of `codes` (as their code or a facet's); all of them
// when `codes` is empty.
void keep_codes(std::vector<Finding>& findings, const std::vector<FindingCode>& codes);

}  // namespace gpureap::doctor

#pragma once
// A finding of `gpureap doctor`: what is wrong, the facts that show it, what it means and
// the exact commands that fix it.
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

struct Finding {
  FindingCode code = FindingCode::DriverMissing;
  Severity severity = Severity::Info;
  std::vector<unsigned> gpus;
  std::vector<pid_t> pids;
  uint64_t memory_bytes = 0;
  std::vector<std::string> evidence;
  std::string explanation;
  std::vector<std::string> remedy;  // commands, gpureap's own where they exist
};

// Most severe first, then most memory first.
void sort_findings(std::vector<Finding>& findings);
Severity worst(const std::vector<Finding>& findings);
// --only: the findings with one of `codes`; all of them when `codes` is empty.
void keep_codes(std::vector<Finding>& findings, const std::vector<FindingCode>& codes);

}  // namespace gpureap::doctor

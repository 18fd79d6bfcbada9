#pragma once
// A finding of `gpureap doctor`: what is wrong, the facts that show it, what it means and
// the exact commands that fix it.
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpureap::doctor {

enum class Severity { Info, Warning, Critical };
const char* to_string(Severity s);
std::optional<Severity> severity_from_string(std::string_view s);

// Every code a finding can have (stable: alert rules and scripts name them).
const std::vector<std::string_view>& finding_codes();

struct Finding {
  std::string code;  // stable: no-such-process, leaked-memory, ...
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

}  // namespace gpureap::doctor

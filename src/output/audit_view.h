#pragma once
// `gpureap audit`: the audit records as a table for people and as the gpureap.audit/v1
// document for programs. Everything a record says about a process is untrusted text.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "audit/record.h"
#include "output/style.h"

namespace gpureap::output {

inline constexpr const char* kAuditSchema = "gpureap.audit/v1";

// TIME (UTC) BY ACTION OUTCOME PID USER MEMORY RELEASED COMMAND; the command last, so a
// narrow terminal cuts only it. Where that table is wider than the terminal, BY, ACTION and
// USER go to a line under each row ("by ghosts, action terminate, user alice"), so MEMORY, RELEASED
// and COMMAND keep their columns. An action that signalled processes names them, with the
// signals sent, on a line under its row: a gone PID's action reaches its keepers, not the row's
// PID.
std::string render_audit_table(const std::vector<audit::Record>& records, const Style& style,
                               std::optional<size_t> max_width);

// {"schema": "gpureap.audit/v1", "records": [...], "malformed_lines": N}
nlohmann::json audit_to_json(const std::vector<audit::Record>& records, size_t malformed_lines);

}  // namespace gpureap::output

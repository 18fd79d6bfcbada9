#pragma once
// Reading an audit log back: the rotated files oldest first, then the live one. A line that
// is not a record (cut short by a full disk, edited by hand, written by a newer gpureap in a
// shape this one cannot read) is counted and skipped, never fatal.
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "audit/record.h"
#include "core/result.h"

namespace gpureap::audit {

struct MalformedLine {
  std::string file;
  size_t line = 0;     // 1-based
  std::string reason;  // "not JSON", "\"time\" is missing", ...
};

struct AuditLogContents {
  std::vector<std::string> files;  // read, oldest first; empty: there is no log yet
  std::vector<Record> records;     // in time order
  size_t malformed_lines = 0;
  std::optional<MalformedLine> first_malformed;
};

// Records at or after `since` (all when empty). A file that exists but cannot be read is an
// error naming it and the reason; missing files are not (PATH.N may rotate away meanwhile).
core::Result<AuditLogContents> read_audit_log(
    const std::string& path, std::optional<std::chrono::system_clock::time_point> since = {});

}  // namespace gpureap::audit

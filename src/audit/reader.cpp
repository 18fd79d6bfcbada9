#include "audit/reader.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "audit/log_files.h"

namespace gpureap::audit {
namespace {

using TimePoint = std::chrono::system_clock::time_point;

bool blank(const std::string& line) {
  return line.find_first_not_of(" \t\r") == std::string::npos;
}

// Reads one file into `out`; false (with errno set) when it exists but cannot be read.
bool read_file(const std::string& file, std::optional<TimePoint> since, AuditLogContents& out) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) return errno == ENOENT;
  if (S_ISDIR(st.st_mode)) {
    errno = EISDIR;
    return false;
  }
  std::ifstream in(file);
  if (!in) return errno == ENOENT;
  out.files.push_back(file);
  std::string line;
  size_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (blank(line)) continue;
    auto malformed = [&](std::string reason) {
      ++out.malformed_lines;
      if (!out.first_malformed)
        out.first_malformed = MalformedLine{file, number, std::move(reason)};
    };
    auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) {
      malformed("not JSON");
      continue;
    }
    auto record = record_from_json(j);
    if (!record) {
      malformed(record.error().message);
      continue;
    }
    if (!since || record->time >= *since) out.records.push_back(std::move(*record));
  }
  if (in.bad()) return false;
  return true;
}

}  // namespace

core::Result<AuditLogContents> read_audit_log(const std::string& path,
                                              std::optional<TimePoint> since) {
  std::vector<std::string> files;
  auto numbers = rotated_numbers(path);
  for (auto n = numbers.rbegin(); n != numbers.rend(); ++n) files.push_back(rotated_path(path, *n));
  files.push_back(path);

  AuditLogContents contents;
  for (const auto& file : files) {
    errno = 0;
    if (!read_file(file, since, contents)) {
      int err = errno;
      return core::Error{"cannot read " + file + ": " + std::strerror(err ? err : EIO),
                         err == EACCES ? "run it as root, or as a user the file's group may read"
                                       : "check the file"};
    }
  }
  // Each file is in write order already; a clock stepped back, or records queued through a
  // full disk, can still interleave them.
  std::stable_sort(contents.records.begin(), contents.records.end(),
                   [](const Record& a, const Record& b) { return a.time < b.time; });
  return contents;
}

}  // namespace gpureap::audit

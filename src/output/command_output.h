#pragma once
// What a command prints for one snapshot, made once for both of the paths that can answer it:
// the command's own scan, and the daemon's evidence from its local socket (rendered by the
// command, daemon/local_protocol.h). Whichever answered, the text is the same; only the line or
// field naming the source differs.
#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace gpureap::output {

struct CommandOutput {
  std::string out;               // stdout, exactly
  std::vector<std::string> err;  // stderr, one line each, without the newline
  int exit_code = 0;
};

// Where the snapshot came from: the daemon's latest sample, this old; empty: the command's own
// scan.
using DaemonAge = std::optional<std::chrono::milliseconds>;

// The JSON documents' `source` field: {"kind":"scan"} or {"kind":"daemon","age_ms":N}.
nlohmann::json source_json(DaemonAge age);
// The table's last line when the daemon answered: "(from the gpureap daemon, snapshot 0.4 s
// old)".
std::string daemon_source_line(std::chrono::milliseconds age);

}  // namespace gpureap::output

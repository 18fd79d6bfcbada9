#pragma once
// The daemon's history over its HTTP API (GET /api/v1/history), for `gpureap report`.
#include <chrono>
#include <optional>
#include <string>

#include "core/result.h"
#include "export/listen_address.h"

namespace gpureap::report {

struct FetchRequest {
  exporter::ListenAddress daemon;    // the daemon's `listen`; a wildcard host means loopback
  std::string since;                 // as /api/v1/history reads it: 6h, a Unix time, RFC 3339
  std::optional<std::string> token;  // the daemon's bearer token, when it asks for one
  std::chrono::milliseconds timeout{std::chrono::seconds(15)};
};

// The body of a 200 answer; any other outcome is an error saying what failed and what to do.
core::Result<std::string> fetch_history(const FetchRequest& request);

}  // namespace gpureap::report

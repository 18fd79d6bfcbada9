#pragma once
// The daemon's history over its HTTP API (GET /api/v1/history), for `gpureap report`, on the
// same bounds as every outbound connection: one deadline for the whole exchange (connecting
// included), a bounded answer, and the bearer token never sent to a port on this machine that
// the daemon does not hold. (On the same machine `report` asks the daemon's local socket
// first; this is the way to a daemon elsewhere, or for a user the socket refuses.)
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "export/listen_address.h"

namespace gpureap::report {

// A history document is a few MiB for a large node; past this the answer is refused unread.
inline constexpr size_t kMaxHistoryBytes = size_t{128} << 20;
// A status line and headers past this are no daemon's.
inline constexpr size_t kMaxHeadBytes = 16 * 1024;

struct FetchRequest {
  exporter::ListenAddress daemon;    // the daemon's `listen`; a wildcard host means loopback
  std::string since;                 // as /api/v1/history reads it: 6h, a Unix time, RFC 3339
  std::optional<std::string> until;  // the same forms; empty: now
  std::optional<std::string> token;  // the daemon's bearer token, when it asks for one
  // The users the daemon may run as (root, the token file's owner): the token goes to a port
  // on this machine only when a socket of one of them holds it.
  std::vector<uid_t> token_holders{0};
  std::chrono::milliseconds timeout{std::chrono::seconds(15)};  // the whole exchange
};

// The body of a 200 answer; any other outcome is an error saying what failed and what to do.
core::Result<std::string> fetch_history(const FetchRequest& request);

// Who holds the server end of the TCP connection `fd` on this machine: the uid of the socket
// the connection was accepted on (the kernel's table of this network namespace); empty when
// the server is not on this machine (or not in this namespace).
std::optional<uid_t> local_server_uid(int fd);

// The peer of connection `fd` is an address of this machine (loopback, or one of its
// interfaces').
bool peer_is_local(int fd);

}  // namespace gpureap::report

#pragma once
// `gpureap ps` asking the node's daemon (its local socket, daemon/ps_protocol.h) instead of
// scanning: the daemon has the answer ready, and sees what a user cannot (other users'
// processes) when it runs as root.
#include <chrono>
#include <optional>
#include <string>

#include "daemon/ps_protocol.h"

namespace gpureap::cli {

// The daemon's answer, or empty on any failure: no socket, refused, a server that is neither
// root nor this user, no full answer `within`, a malformed answer or ok:false. The caller then
// scans on its own, and says nothing: a node without a daemon is normal.
std::optional<daemon::PsAnswer> ask_daemon(
    const std::string& socket_path, const daemon::PsRequest& request,
    std::chrono::milliseconds within = std::chrono::milliseconds(2000));

}  // namespace gpureap::cli

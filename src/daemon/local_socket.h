#pragma once
// The daemon's local Unix socket as a file: made safely where the config says, removed only
// when it is still the one this daemon made.
#include <sys/types.h>
#include <sys/un.h>

#include <optional>
#include <string>

#include "core/result.h"

namespace gpureap::daemon {

struct BoundSocket {
  int fd = -1;  // listening, non-blocking, close-on-exec
  std::string path;
  dev_t dev = 0;  // the socket file's identity, so stopping never removes a successor's
  ino_t ino = 0;
};

// Creates the parent directory when it is missing (mode 0755; its own parent must exist),
// removes a stale socket left by a daemon that died (only a socket nothing answers on; any
// other file, or a socket in use, is an error and stays), binds, restricts the socket to its
// owner (mode 0600: root only for a root daemon) before it accepts anything, and listens.
core::Result<BoundSocket> bind_local_socket(const std::string& path);

// Closes the socket and removes its file if the path still names it.
void close_local_socket(BoundSocket& socket);

// The address of the socket file at `path`; empty when the path is empty or too long for one.
std::optional<sockaddr_un> local_address(const std::string& path);

// The process at the other end of a connected socket runs as root or as this process's user:
// the only peers either side of the local socket trusts (the daemon answers no one else, and
// `gpureap ps` prints no one else's text). Its uid goes to `uid` when given.
bool peer_is_root_or_self(int fd, uid_t* uid = nullptr);

// The process at the other end of a connected socket is in this process's PID namespace: the
// PIDs it sends name this process's processes. False where the kernel gives no PID for it here
// (a peer in a namespace this one cannot see) or either namespace cannot be read.
bool peer_shares_pid_namespace(int fd);

}  // namespace gpureap::daemon

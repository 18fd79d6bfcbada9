#pragma once
// A command asking the node's daemon (its local socket, daemon/local_protocol.h) instead of
// scanning: the daemon has the answer ready, and sees what a user cannot (other users'
// processes) when it runs as root.
#include <chrono>
#include <optional>
#include <string>

#include "cli/global_options.h"
#include "collect/collector.h"
#include "core/listed_sightings.h"
#include "daemon/local_protocol.h"

namespace gpureap::cli {

// How long a command waits for the daemon's whole answer before it scans on its own.
inline constexpr std::chrono::milliseconds kDaemonAnswerWithin{2000};

// The daemon's answer, or empty on any failure: no socket, refused, a server that is neither
// root nor this user, no full answer `within`, a malformed answer or ok:false. The caller then
// scans on its own, and says nothing: a node without a daemon is normal.
std::optional<daemon::Answer> ask_daemon(const std::string& socket_path,
                                         const daemon::Request& request,
                                         std::chrono::milliseconds within = kDaemonAnswerWithin);

// The daemon's socket when it may answer for these options, else empty: not with `no_daemon`
// (--no-daemon), not for roots the user named (the daemon answers for this machine's own, with
// its own driver), not with a malformed --driver-timeout (the command's own run reports it),
// not when GPUREAP_DAEMON_SOCKET="" names none.
std::optional<std::string> daemon_socket(const GlobalOptions& global, bool no_daemon);

// The evidence doctor examines as the daemon holds it, for `ps` and `doctor` to render as they
// render their own scan: empty as ask_daemon's answer is. A daemon of another gpureap version
// (it refuses this command's request, or sends evidence of another version) or whose PIDs name
// other processes (foreign_pids) is said in one line on stderr, then the command scans on its
// own.
std::optional<daemon::EvidenceAnswer> ask_daemon_evidence(
    const std::string& socket_path, std::chrono::milliseconds settle,
    std::chrono::milliseconds within = kDaemonAnswerWithin);

// Why the PIDs of `daemons` (the daemon's view) name other processes than this command's /proc,
// empty when they name the same (core/pid_space.h): a command in a container asking the host's
// daemon through a mounted socket.
std::optional<std::string> foreign_pids(const core::ProcView& daemons);

// The daemon's sightings of the driver's lists (core/listed_sightings.h), for a command that
// plans signals from its own scan: empty as ask_daemon_evidence's answer is, with `no_daemon`,
// or where --proc-root names other PIDs than the daemon's. Other roots than the daemon's do not
// stop it. Without them the command decides on one look, as with no daemon on the node.
std::optional<core::ListedSightings> ask_daemon_sightings(const GlobalOptions& global,
                                                          bool no_daemon);

// Has `collector` take on `sightings` (ask_daemon_sightings', or a daemon's answer's) for every
// collection after this. Where they cannot speak of its processes (another boot, another PID
// namespace) it says so once on stderr: the command then decides on one look, and its user
// should know. Nothing is said without sightings (no daemon, --no-daemon).
void adopt_daemon_sightings(collect::Collector& collector,
                            std::optional<core::ListedSightings> sightings);

// Prints what a command made of a snapshot (its own or the daemon's): stderr lines first, then
// stdout; returns the exit status.
int print_command_output(const std::string& out, const std::vector<std::string>& err,
                         int exit_code);

}  // namespace gpureap::cli

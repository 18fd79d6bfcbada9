#pragma once
// Telling the node's daemon what a command is about to do, so its audit log and the report
// can say who ended which process: `kill`, `doctor --fix`, `top`'s kill, `run`'s teardown and
// `reset` announce on the daemon's local socket just before they act. The daemon takes the
// user from the socket's peer credentials. Without a daemon (or one that does not answer
// within a short bound) nothing changes: the command acts as before and says nothing.
#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "daemon/local_protocol.h"
#include "reap/plan.h"

namespace gpureap::cli {

// The longest an announcement may delay the action it precedes.
inline constexpr std::chrono::milliseconds kAnnounceWithin{500};

// The announcement of the plan's signalled targets, `by` the command ("gpureap kill 4242").
daemon::AnnounceRequest announcement(const std::string& by, const std::string& signal,
                                     const reap::Plan& plan);

// Sends it, when a daemon's socket is there; true when the daemon recorded it.
bool announce(const daemon::AnnounceRequest& request);
// The same for a plan, the usual case.
bool announce_plan(const std::string& by, int signal, const reap::Plan& plan);

// "gpureap kill 4242 --gpu 0": a command in short, each word made safe for one line.
std::string command_words(const std::vector<std::string>& words);

}  // namespace gpureap::cli

#pragma once
// exec sinks: run a command (argv as configured; a one-string command is already /bin/sh -c)
// with the payload on its stdin.
//
// The command runs in its own process group with a clean signal state, the daemon's
// environment plus GPUREAP_ALERT_STATUS (firing | resolved), GPUREAP_ALERT_NAME and
// GPUREAP_SINK, and no file descriptor of the daemon but the three pipes (its listening socket,
// connections and logs stay closed to it). Exit status 0 is success. Past the sink's timeout the
// whole group is killed; its stdout and stderr (the first few KiB of each) go to the log.
#include <memory>

#include "alert/sender.h"

namespace gpureap::alert {

std::unique_ptr<Sender> make_exec_sender(const SinkConfig& sink);

}  // namespace gpureap::alert

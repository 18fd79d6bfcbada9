#pragma once
// Which listed processes run other processes' GPU work (a backend's WorkServer), and which
// server runs each client's work. The claim is checked against what the kernel shows of the
// process and its parent, since anyone can name a program as the vendor names its server.
#include <string>
#include <utility>
#include <vector>

#include "backend/registry.h"
#include "core/snapshot.h"

namespace gpureap::collect {

using WorkServers = std::vector<std::pair<std::string, backend::WorkServer>>;

// A live process is its backend's server when the program it runs (/proc/PID/exe) has the
// server's name and its parent runs the daemon that starts servers: its exe has that name, or,
// where the exe cannot be read (root's, to another user), it runs as root under that name.
bool is_work_server(const core::ProcView& view, const core::HostProcess& process,
                    const backend::WorkServer& server);

// Marks `drivers`' verified servers (DriverProcess::serves_clients) and names each client's
// server (DriverProcess::server): the one server on the client's GPU, or the one of the
// client's user among several. Needs the details of the listed processes and their parents.
void mark_work_servers(const core::ProcView& view, core::DriverReading& drivers,
                       const WorkServers& servers);

// The last lines of the logs of the daemons that start the servers `s` lists, as "FILE: LINE",
// when `s` has a verified server: at most kLogLines per file, each cut at kLogLineBytes;
// unreadable files are left out. The lines are untrusted text, escaped where they are shown.
// The folder is WorkServer::log_dir under `runtime_root`, or where the daemon's
// WorkServer::log_dir_variable (read from <proc_root>/PID/environ) moves it, when that daemon
// is root's: another user's daemon could point root's doctor at any file.
std::vector<std::string> read_work_server_logs(const std::string& runtime_root,
                                               const std::string& proc_root,
                                               const core::Snapshot& s, const WorkServers& servers);

}  // namespace gpureap::collect

#include "collect/work_servers.h"

#include <algorithm>
#include <deque>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <utility>

namespace gpureap::collect {
namespace {

std::string_view work_server_basename(std::string_view path) {
  auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// The kernel keeps 15 bytes of a program's name as its comm.
constexpr std::size_t kCommLength = 15;

bool runs_program(const core::HostProcess& p, const std::string& program, bool root_comm_suffices) {
  if (!p.is_live() || !p.details) return false;
  // A copy in a user's home runs the user's code under the server's name: only a program no
  // unprivileged user can have written there (root's, in root's directories) is the server.
  if (p.details->exe)
    return p.details->exe->system_installed &&
           work_server_basename(p.details->exe->path) == program;
  // Root's exe is unreadable to other users; a root process's name is root's choice.
  return root_comm_suffices && p.details->uid == 0u &&
         p.stat.comm == program.substr(0, kCommLength);
}

std::optional<uid_t> uid_of(const core::ProcView& view, pid_t pid) {
  const auto* p = view.find(pid);
  return p && p->details ? p->details->uid : std::nullopt;
}

constexpr std::size_t kLogLines = 5;
constexpr std::size_t kLogLineBytes = 240;
constexpr std::streamoff kLogTailBytes = 64 * 1024;  // read from the end of a log, no more
constexpr std::size_t kEnvironBytes = 128 * 1024;    // of a daemon's environment, no more

std::vector<std::string> log_tail(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size <= 0) return {};
  const std::streamoff from = size > kLogTailBytes ? size - kLogTailBytes : 0;
  in.seekg(from);
  std::deque<std::string> lines;
  std::string line;
  bool first = from > 0;  // a line cut by the start of the tail is not a line
  while (std::getline(in, line)) {
    if (std::exchange(first, false)) continue;
    if (line.empty()) continue;
    if (line.size() > kLogLineBytes) line = line.substr(0, kLogLineBytes) + "…";
    lines.push_back(std::move(line));
    if (lines.size() > kLogLines) lines.pop_front();
  }
  return {lines.begin(), lines.end()};
}

// Where the root daemon that started `server` moved its log folder with `variable`: an absolute
// path without "..", or nothing (another user's daemon, no such variable, unreadable).
std::optional<std::string> moved_log_dir(const std::string& proc_root, const core::ProcView& view,
                                         pid_t server, const std::string& variable) {
  if (variable.empty()) return std::nullopt;
  const auto* p = view.find(server);
  const auto* daemon = p ? view.find(p->stat.ppid) : nullptr;
  if (!daemon || !daemon->details || daemon->details->uid != 0u) return std::nullopt;
  std::ifstream in(proc_root + "/" + std::to_string(daemon->stat.pid) + "/environ",
                   std::ios::binary);
  std::string entry;
  const std::string prefix = variable + "=";
  for (std::size_t read = 0; std::getline(in, entry, '\0') && read < kEnvironBytes;
       read += entry.size() + 1) {
    if (entry.rfind(prefix, 0) != 0) continue;
    std::string dir = entry.substr(prefix.size());
    if (dir.size() < 2 || dir.front() != '/' || dir.find("/..") != std::string::npos)
      return std::nullopt;
    return dir;
  }
  return std::nullopt;
}

}  // namespace

std::vector<std::string> read_work_server_logs(const std::string& runtime_root,
                                               const std::string& proc_root,
                                               const core::Snapshot& s,
                                               const WorkServers& servers) {
  std::map<std::string, std::vector<pid_t>> listed;  // backend -> its verified servers
  for (const auto& g : s.drivers.gpus)
    for (const auto& p : g.processes)
      if (p.serves_clients) listed[g.backend].push_back(p.pid);
  const std::string root = runtime_root + (runtime_root.ends_with('/') ? "" : "/");
  std::vector<std::string> out;
  std::set<std::string> read;  // each log once, however many servers or entries name it
  for (const auto& [backend, server] : servers) {
    auto found = listed.find(backend);
    if (found == listed.end() || server.log_dir.empty()) continue;
    for (pid_t pid : found->second) {
      const auto moved = moved_log_dir(proc_root, s.proc, pid, server.log_dir_variable);
      const std::string dir = moved ? root + moved->substr(1) : root + server.log_dir;
      for (const auto& file : server.log_files)
        if (read.insert(dir + "/" + file).second)
          for (auto& line : log_tail(dir + "/" + file)) out.push_back(file + ": " + line);
    }
  }
  return out;
}

bool is_work_server(const core::ProcView& view, const core::HostProcess& process,
                    const backend::WorkServer& server) {
  if (!runs_program(process, server.program, false)) return false;
  const auto* parent = view.find(process.stat.ppid);
  return parent && runs_program(*parent, server.parent_program, true);
}

void mark_work_servers(const core::ProcView& view, core::DriverReading& drivers,
                       const WorkServers& servers) {
  for (auto& g : drivers.gpus) {
    auto spec = std::find_if(servers.begin(), servers.end(),
                             [&](const auto& s) { return s.first == g.backend; });
    if (spec == servers.end()) continue;
    struct Server {
      pid_t pid;
      std::optional<unsigned> gpu_instance;
    };
    std::vector<Server> here;
    for (auto& p : g.processes) {
      p.serves_clients.reset();
      p.server.reset();
      const auto* host = view.find(p.pid);
      if (host && is_work_server(view, *host, spec->second)) {
        p.serves_clients = spec->second.name;
        here.push_back({p.pid, p.gpu_instance_id});
      }
    }
    if (here.empty()) continue;
    for (auto& p : g.processes) {
      if (p.kind != core::GpuProcessKind::ServerClient || p.serves_clients) continue;
      // A server runs the work of its own user's clients (a gone client's user is unknown), on
      // its own instance of a split GPU (a server per instance).
      std::vector<pid_t> candidates;
      const auto client_uid = uid_of(view, p.pid);
      for (const auto& s : here)
        if ((!client_uid || uid_of(view, s.pid) == client_uid) &&
            (!p.gpu_instance_id || !s.gpu_instance || s.gpu_instance == p.gpu_instance_id))
          candidates.push_back(s.pid);
      if (candidates.size() == 1) p.server = candidates.front();
    }
  }
}

}  // namespace gpureap::collect

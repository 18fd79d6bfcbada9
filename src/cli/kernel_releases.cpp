#include "cli/kernel_releases.h"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "cli/daemon_client.h"
#include "collect/own_pid_space.h"
#include "daemon/local_protocol.h"
#include "daemon/releases_document.h"
#include "history/history_document.h"
#include "text/escape.h"
#include "text/time_format.h"

namespace gpureap::cli {
namespace {

using nlohmann::json;

// The releases of the daemon's document `text` (daemon/releases_document.h); empty when it is
// not one, when the daemon follows no events (its list then says nothing about a kill), or when
// its PIDs are not of `our_pid_namespace` (the namespace's inode): a command in a container
// would take the host's closes of the same numbers for its processes'.
std::optional<std::vector<KernelRelease>> releases_of(const std::string& text,
                                                      std::optional<uint64_t> our_pid_namespace) {
  json doc = json::parse(text, nullptr, false);
  if (!doc.is_object() || doc.value("schema", "") != daemon::kReleasesSchema ||
      doc.value("tracking", "") != "events" || !doc.contains("releases") ||
      !doc["releases"].is_array() || !our_pid_namespace || !doc.contains("pid_namespace") ||
      !doc["pid_namespace"].is_number_unsigned() ||
      doc["pid_namespace"].get<uint64_t>() != *our_pid_namespace)
    return std::nullopt;
  auto releases = history::releases_from_json(doc["releases"]);
  if (!releases) return std::nullopt;
  std::vector<KernelRelease> out;
  for (const auto& r : *releases) out.push_back({r.pid, r.path, r.at});
  return out;
}

std::optional<std::vector<KernelRelease>> ask(const std::string& socket) {
  auto answer = ask_daemon(socket, daemon::ReleasesRequest{});
  if (!answer) return std::nullopt;
  return releases_of(answer->output, collect::own_pid_space("/proc").pid_namespace);
}

}  // namespace

std::optional<std::vector<KernelRelease>> kernel_releases(
    const std::vector<pid_t>& pids, std::chrono::system_clock::time_point since, bool no_daemon) {
  std::string socket = daemon::default_local_socket();
  if (no_daemon || socket.empty() || pids.empty()) return std::nullopt;
  // The daemon writes times to the millisecond: a release in the signal's own millisecond counts.
  auto from = std::chrono::floor<std::chrono::milliseconds>(since);
  auto mine = [&](const std::vector<KernelRelease>& all) {
    std::vector<KernelRelease> out;
    for (const auto& r : all)
      if (r.at >= from && std::find(pids.begin(), pids.end(), r.pid) != pids.end())
        out.push_back(r);
    return out;
  };
  auto all = ask(socket);
  if (!all) return std::nullopt;
  auto found = mine(*all);
  // The memory is back, so the files were closed: the daemon's thread may still be reading
  // the event. One more look a moment later.
  if (found.empty()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (auto again = ask(socket)) found = mine(*again);
  }
  return found;
}

json kernel_releases_json(const std::optional<std::vector<KernelRelease>>& releases) {
  if (!releases) return nullptr;
  json list = json::array();
  for (const auto& r : *releases)
    list.push_back({{"pid", r.pid}, {"path", r.path}, {"at", text::iso8601_utc(r.at)}});
  return list;
}

std::string kernel_releases_text(const std::optional<std::vector<KernelRelease>>& releases,
                                 const reap::Report& report) {
  if (!releases || releases->empty()) return "";
  std::string out;
  for (const auto& r : *releases) {
    auto from = report.timing.signalled.value_or(report.timing.started);
    std::string after = "the first signal";
    for (const auto& o : report.outcomes)
      if (o.pid == r.pid && o.exited_at) {
        from = *o.exited_at;
        after = "its exit";
      }
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(r.at - from).count();
    out += fmt::format(
        "The kernel closed {} for the last time at {}, {} ms after {} (PID {} held it last).\n",
        text::terminal_safe(r.path), text::iso8601_utc(r.at), std::max<long long>(ms, 0), after,
        r.pid);
  }
  return out;
}

}  // namespace gpureap::cli

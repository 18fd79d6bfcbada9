#include "doctor/server_rules.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "backend/registry.h"
#include "doctor/evidence.h"

namespace gpureap::doctor {
namespace {

const core::GpuUse* served_use(const core::ProcessRow& r) {
  for (const auto& u : r.gpus)
    if (u.serves_clients) return &u;
  return nullptr;
}

const backend::WorkServer* work_server_on(const DoctorInput& in, const core::Snapshot& s,
                                          const std::vector<unsigned>& gpus) {
  for (unsigned index : gpus)
    if (const core::Gpu* g = s.gpu(index))
      if (const auto* ws = backend::work_server_of(g->backend, in.backends)) return ws;
  return nullptr;
}

std::string server_label(const core::Snapshot& s, pid_t pid, const std::string& name) {
  const auto* p = s.find(pid);
  return fmt::format("{} PID {}{}", name, pid,
                     p && !p->stat.comm.empty() ? " (" + p->stat.comm + ")" : std::string());
}

// Whose GPU work a restart of the servers ends: every live client of every server (the daemon
// stops them all), by PID, name and user. Only a server the kernel vouches for gets such a
// remedy (DriverProcess::serves_clients: a system-installed program under its daemon's).
std::string whose_work(const core::Snapshot& s) {
  std::vector<std::string> who;
  for (const auto& r : s.rows) {
    if (!r.process || !r.process->is_live()) continue;
    if (std::none_of(r.gpus.begin(), r.gpus.end(), [](const core::GpuUse& u) {
          return u.server || u.kind == core::GpuProcessKind::ServerClient;
        }))
      continue;
    const auto& d = r.process->details;
    who.push_back(process_label(*r.process) + (d && d->user ? " of " + *d->user : ""));
  }
  if (who.empty()) return "no client runs now";
  return fmt::format("it ends the work of {}", fmt::join(who, ", "));
}

std::vector<RemedyStep> restart_steps(const core::Snapshot& s, const backend::WorkServer* ws,
                                      StepKind first) {
  if (!ws || ws->restart.empty()) return {};
  return {{first, ws->restart,
           fmt::format("restarts the {}s: {}; {}; run it as the user that started the daemon, "
                       "with its environment{}",
                       ws->name, ws->restart_effect, whose_work(s),
                       ws->environment.empty() ? "" : " (" + ws->environment + ")")}};
}

}  // namespace

Finding served_ghost(const DoctorInput& in, const core::ProcessRow& r, const core::Ghost& ghost) {
  const auto& s = in.last;
  std::vector<unsigned> gpus;
  for (const auto& u : r.gpus) gpus.push_back(u.index);
  const auto* ws = work_server_on(in, s, gpus);
  const std::string name = ws ? ws->name : "server";
  Finding f{FindingCode::KeptByServer, Severity::Critical, gpus, {r.pid}, r.listed_bytes()};
  f.evidence.push_back(
      fmt::format("PID {} is listed on GPU {} with {} as a client of {}, but is "
                  "not in /proc",
                  r.pid, fmt::join(gpus, ","), bytes_text(r.listed_bytes()),
                  ws ? "an " + name : std::string("a server")));
  for (pid_t server : ghost.servers) {
    f.pids.push_back(server);
    f.evidence.push_back(
        fmt::format("{} is listed on that GPU and runs its clients' work in its "
                    "own context",
                    server_label(s, server, name)));
  }
  f.explanation = fmt::format(
      "The client is gone, but its work ran inside the {}, which still holds the client's memory: "
      "no inherited file keeps it, so ending other processes does not free it, and gpureap does "
      "not end the server (every client's work runs in it).",
      name);
  for (pid_t server : ghost.servers)
    if (ws && !ws->end_client.empty())
      f.remedy.push_back({f.remedy.empty() ? StepKind::Run : StepKind::Or,
                          backend::fill_client(ws->end_client, server, r.pid),
                          fmt::format("ends the gone client's outstanding work on {} PID {} "
                                      "(recent CUDA releases)",
                                      name, server)});
  for (auto& st : restart_steps(s, ws, f.remedy.empty() ? StepKind::Run : StepKind::Or))
    f.remedy.push_back(std::move(st));
  if (f.remedy.empty())
    f.remedy.push_back(
        {StepKind::Run, "restart the server", "every client loses its work; " + whose_work(s)});
  f.summary = fmt::format("GPU {}: {} of gone PID {} kept by {} PID {}", fmt::join(gpus, ","),
                          bytes_text(r.listed_bytes()), r.pid, name, pid_list(ghost.servers));
  return f;
}

const core::ProcessRow* server_hit(const core::KernelGpuEvent& e, const core::Snapshot& s) {
  if (!e.pid || !e.time || e.stamp == core::KernelStamp::Future) return nullptr;
  const auto* r = s.row(*e.pid);
  if (!r || !r->process || !served_use(*r)) return nullptr;
  auto started = s.start_time(r->process->stat);
  return started && *started <= *e.time ? r : nullptr;
}

void server_fault(const DoctorInput& in, const core::KernelGpuEvent& e,
                  const core::ProcessRow& server, Finding& f) {
  const auto& s = in.last;
  const auto* use = served_use(server);
  const std::string name = use ? *use->serves_clients : "server";
  const auto* ws = work_server_on(in, s, {use ? use->index : 0u});
  const unsigned gpu = e.gpu.value_or(use ? use->index : 0u);
  f.severity = std::max(f.severity, Severity::Critical);
  const std::string summary =
      fmt::format("{} PID {} on GPU {} hit {}: its clients' work fails until it restarts", name,
                  server.pid, gpu, e.code_text());
  // The same error of the server seen again is one problem: its evidence and remedy said once.
  if (std::exchange(f.summary, summary) == summary) return;
  if (std::find(f.pids.begin(), f.pids.end(), server.pid) == f.pids.end())
    f.pids.push_back(server.pid);
  const size_t clients = use ? use->clients.size() : 0;
  f.evidence.push_back(
      clients == 0 ? fmt::format("{} runs no client's GPU work now", name)
                   : fmt::format("{} runs the GPU work of {} client{} ({}): a fault in the server "
                                 "is theirs",
                                 name, clients, clients == 1 ? "" : "s", pid_list(use->clients)));
  // The daemon's log is root's (mode 0600): not every reader of the finding may see it.
  for (const auto& line : in.work_server_log) f.restricted_evidence.push_back(line);
  f.explanation = fmt::format(
                      "The {} hit a GPU fault; the work of every client it serves fails "
                      "until the server restarts. ",
                      name) +
                  f.explanation;
  auto steps = restart_steps(s, ws, StepKind::Run);
  for (auto& st : f.remedy)
    if (st.kind == StepKind::Run) st.kind = StepKind::Then;
  f.remedy.insert(f.remedy.begin(), steps.begin(), steps.end());
}

}  // namespace gpureap::doctor

#include "policy/audit_record.h"

namespace gpureap::policy {

audit::Record make_record(const Policy& policy, const Evaluation& e, const core::Snapshot& s,
                          bool enforced, std::string event, std::string outcome) {
  audit::Record r;
  r.time = std::chrono::system_clock::now();
  r.host = s.hostname;
  r.event = std::move(event);
  r.policy = policy.name;
  r.action = std::string(to_string(policy.action));
  r.enforced = enforced;
  r.outcome = std::move(outcome);
  r.reasons = e.reasons();
  auto& id = r.process;
  id.pid = e.pid;
  id.start_ticks = e.start_ticks;
  if (const core::ProcessRow* row = s.row(e.pid)) {
    if (row->process) {
      const auto& p = *row->process;
      id.comm = p.stat.comm;
      id.start_time = s.start_time(p.stat);
      if (p.details) {
        id.uid = p.details->uid;
        id.user = p.details->user;
        id.cmdline = p.details->cmdline;
        if (const auto* c = p.verified_container()) id.container = c->id.value_or(c->runtime);
      }
    } else if (row->driver_name) {
      id.comm = *row->driver_name;
    }
  }
  // Per GPU: what it holds or keeps alive there (unknown where the driver did not say).
  for (unsigned gpu : e.gpus) {
    auto known = e.memory_by_gpu.find(gpu);
    r.memory.push_back({gpu, known != e.memory_by_gpu.end() ? std::optional<uint64_t>(known->second)
                             : e.memory_bytes               ? std::optional<uint64_t>(0)
                                                            : std::nullopt});
  }
  return r;
}

std::string describe_process(const audit::Record& r) {
  const auto& p = r.process;
  std::string who = p.comm.empty() ? "" : p.comm;
  if (p.user)
    who += (who.empty() ? "user " : ", user ") + *p.user;
  else if (p.uid)
    who += (who.empty() ? "uid " : ", uid ") + std::to_string(*p.uid);
  if (!p.start_ticks) who += who.empty() ? "gone" : ", gone";
  return "PID " + std::to_string(p.pid) + (who.empty() ? "" : " (" + who + ")");
}

}  // namespace gpureap::policy

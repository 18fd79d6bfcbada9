#pragma once
// One line of the audit log: a policy decision or action, with the process identity it was
// about, the memory it held and what came of it. Serialized as one JSON object per line
// (JSON Lines); the field names are the public format that `gpureap audit` and users'
// tools read.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"

namespace gpureap::audit {

// What identifies a process for good: a PID is reused, a PID and its start time are not.
struct ProcessIdentity {
  pid_t pid = 0;
  std::optional<uint64_t> start_ticks;  // empty for a PID the driver lists but /proc lacks
  std::optional<std::chrono::system_clock::time_point> start_time;
  std::optional<uid_t> uid;
  std::optional<std::string> user;
  std::string comm;
  std::vector<std::string> cmdline;
  std::optional<std::string> container;
};

struct GpuMemory {
  unsigned gpu = 0;
  std::optional<uint64_t> bytes;  // empty when the driver did not say
};

// A process an action signalled, as the plan pinned it, and the signals it was sent in order
// ("SIGTERM", "SIGKILL"). For a gone PID these are its keepers: the record's process is the
// gone PID, which no signal can reach.
struct Signalled {
  pid_t pid = 0;
  std::optional<uint64_t> start_ticks;
  std::string comm;
  std::optional<uid_t> uid;
  std::optional<std::string> user;
  std::vector<std::string> signals;
};
// "PID 4250 (python, user alice)": who it was, safe for a terminal (its name is untrusted).
std::string describe(const Signalled& s);

// Who asked for an action a gpureap command announced to the daemon (`kill`, `doctor --fix`,
// `top`, `run`, `reset`): the uid comes from the local socket's peer credentials, which the
// kernel vouches for; the command line is the client's own words.
struct Actor {
  uid_t uid = 0;
  std::string user;     // the uid's login name, as the daemon read it
  std::string command;  // "gpureap kill 4242"
};

struct Record {
  std::chrono::system_clock::time_point time;
  std::string host;
  // "decision" (matched for `after`), "action" (the reaper's result, one per attempt),
  // "gave-up"; "announced" (a gpureap command said it is about to signal the process, or to
  // reset a GPU: `actor` says who); "records-dropped" is the writer's own note of records it could
  // not keep (its process.pid and attempt are null).
  std::string event;
  std::string policy;
  std::string action;  // notify, terminate, kill
  bool enforced = false;
  // decisions: would-terminate, would-kill, notified, acting; actions: released, still-held,
  // survived, refused, not-permitted, gone, unmatched, failed; gave-up; dropped (records-dropped)
  std::string outcome;
  ProcessIdentity process;
  std::vector<GpuMemory> memory;           // per GPU, at decision time
  std::optional<uint64_t> released_bytes;  // memory the action got back
  // When the kernel reported the final close of the process's GPU files (the daemon's holder
  // events): the moment its driver freed what they held. Empty without events.
  std::optional<std::chrono::system_clock::time_point> released_at;
  std::vector<std::string> reasons;  // why the policy matched
  unsigned attempt = 0;              // 1 for the first try of an action; 0: none (null)
  std::string detail;                // an error, a refusal, who still holds the memory
  // action: the processes it sent at least one signal to; empty for every other event
  std::vector<Signalled> signalled;
  std::optional<Actor> actor;  // announced: who asked; null for a policy's records
};

nlohmann::json to_json(const Record& r);
// The line the audit log holds: the same fields in their documented order (time first), on
// one line, ending with '\n'. Invalid UTF-8 in untrusted text is replaced, never thrown on.
std::string to_json_line(const Record& r);
// A line read back; a line that is not a record is an error saying why.
core::Result<Record> record_from_json(const nlohmann::json& j);

}  // namespace gpureap::audit

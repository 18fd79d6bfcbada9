#pragma once
// A kill plan: what `gpureap kill` intends to signal and why, decided before any signal is
// sent. Everything the executor and the verifier need is recorded here, so the plan that was
// shown (and confirmed) is exactly what is executed: the start time pins each PID to the
// process that was planned.
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/anomaly.h"
#include "core/gpu_place.h"
#include "core/snapshot.h"

namespace gpureap::reap {

// Who runs gpureap: the rules never let it signal itself or the processes it runs under.
struct Caller {
  pid_t self = 0;
  pid_t pgid = 0;
  std::vector<pid_t> ancestors;  // parent, grandparent, ... up to PID 1
  uid_t uid = 0;                 // real
  uid_t euid = 0;                // effective
  bool privileged() const { return euid == 0; }
};

// Why a process is in the plan. Names are part of the JSON schema.
enum class ReasonKind {
  Named,            // PID given on the command line
  ListedOnGpu,      // the driver lists it on GPU `gpu`
  HoldsDevice,      // holds a device file that reaches the GPU
  InheritedHolder,  // keeps the context of gone PID `pid` alive
  Descendant,       // --tree: descends from `pid`
  ProcessGroup,     // --group: in process group `pid`
  Ghost,            // --ghosts or a diagnosis: `anomaly` (inherited-holder, orphan)
  UserHolder,       // --user alone: a GPU holder of that user
  Policy,           // a daemon cleanup policy matched it
  StoppedHolder,    // --stopped: a paused holder (never chosen as a ghost)
  StalledJob,       // a diagnosis: a process of a distributed job one of whose ranks is gone
};

// A process a diagnosis chose (doctor --fix), not one a user typed: it keeps the reason it was
// chosen for, so the protected list and every other check of that reason still apply. The plan
// is made on the snapshot of the diagnosis, which pins it to the process that was diagnosed.
struct Chosen {
  pid_t pid = 0;
  ReasonKind kind;
  std::optional<core::Anomaly> anomaly;
};

// A number a user typed that is a thread of a process, not a process (/proc/TID answers for
// it, though /proc does not list it): signals and plans are for whole processes, so nothing is
// chosen for it, and the user is told which process it belongs to, to name that one if meant.
struct NamedThread {
  pid_t tid = 0;
  pid_t process = 0;                // its thread group, as the kernel says
  std::optional<std::string> comm;  // the process's name, for the message; a label only
};

// "TID 1234 is a thread of process 1200 (python3), not a process; ...": whose thread it is, that
// nothing was chosen for it, and the command that ends its process. The plan's first words
// about that number, in every form of the plan.
std::string describe(const NamedThread& thread);

// What the user asked for. Selectors choose: `pids`, `chosen`, `ghosts`, `stopped`. `gpu` and
// `user` choose only when no selector is given; with one they filter its choice (an
// intersection: a filter never adds a process). `tree` and `group` widen the filtered choice.
struct Request {
  std::vector<pid_t> pids;           // named explicitly (typed by a user)
  std::vector<Chosen> chosen;        // chosen by a diagnosis or a policy
  std::string chosen_by = "chosen";  // how the plan's first line names them: "doctor's remedies"
  std::optional<unsigned> gpu;       // --gpu N (the index gpureap shows)
  std::optional<std::string> user;   // --user NAME or uid
  bool ghosts = false;
  bool stopped = false;
  bool tree = false;
  bool group = false;
  // --gpu N/G or N/G/C (or an instance's UUID), with `gpu` N: only that GPU instance, or
  // compute instance (core/gpu_place.h).
  std::optional<core::GpuPlace> instance;

  bool has_selector() const { return !pids.empty() || !chosen.empty() || ghosts || stopped; }
};

// The request in words, as the plan's first line says it: "ghosts on GPU 0 of user bob".
std::string describe(const Request& request);

struct Reason {
  ReasonKind kind;
  std::optional<unsigned> gpu;
  std::optional<pid_t> pid;
  std::optional<core::Anomaly> anomaly;
  // With `gpu`: the GPU instance it is listed in or holds the files of ("GPU 0/3").
  std::optional<unsigned> gpu_instance;
  bool operator==(const Reason&) const = default;
};

// What will happen to a target.
enum class Action {
  Signal,        // will be signalled
  Refused,       // a safety rule forbids it (refusal says which)
  NotPermitted,  // owned by another user and we are not root
  Zombie,        // already exited; only its parent can reap it
};

struct Parent {
  pid_t pid = 0;
  std::optional<std::string> comm;
};

struct Target {
  pid_t pid = 0;
  uint64_t start_ticks = 0;  // pins the PID to this process
  std::string comm;
  std::vector<std::string> cmdline;
  std::optional<uid_t> uid;
  std::optional<std::string> user;
  char state = '?';
  pid_t pgid = 0;
  std::vector<core::GpuUse> gpus;  // memory the driver lists for this PID
  std::vector<pid_t> keeps;        // gone listed PIDs whose contexts it keeps alive
  // Live processes that share its open GPU files (its workers) and that the plan leaves alone:
  // while they live, its listed memory stays held.
  std::vector<pid_t> sharers_left;
  std::vector<Reason> reasons;
  bool protected_process = false;  // reap::is_protected, decided from /proc when planned
  Action action = Action::Signal;
  std::string refusal;  // why, for Refused and NotPermitted
  Parent parent;        // reported for zombies (and useful context otherwise)

  bool named() const;
  bool has(ReasonKind kind) const;
  std::optional<uint64_t> memory_bytes() const;  // sum of the known listed memory
};

// A driver-listed PID that no longer exists: its memory is freed by killing its keepers.
struct GoneListing {
  pid_t pid = 0;
  std::optional<std::string> driver_name;
  std::vector<core::GpuUse> gpus;
  std::vector<pid_t> keepers;  // targets that keep its context alive
  bool leaked = false;         // nothing alive holds it
  bool foreign = false;        // a PID of another namespace: not visible here

  std::optional<uint64_t> memory_bytes() const;
};

// Per-GPU memory figures at planning time, to tell later whether the memory came back.
struct GpuBaseline {
  unsigned index = 0;
  std::optional<uint64_t> used_bytes;
  std::optional<uint64_t> unattributed_bytes;
};

struct Plan {
  // describe(request) without the typed numbers that are threads (told in `threads`): what was
  // asked for, in words. Empty when nothing but threads was typed: no process was asked for.
  std::string selection;
  std::vector<Target> targets;  // sorted by pid
  std::vector<GoneListing> gone;
  std::vector<GpuBaseline> gpus;
  bool backend_available = false;
  std::vector<std::string> notes;  // things the user should know (unmatched PIDs, ...)
  // Typed numbers that are threads of a process: nothing is chosen for them, and each is told
  // (describe) before anything else, in place of a selection that would call it a PID.
  std::vector<NamedThread> threads;

  const Target* find(pid_t pid) const;
  size_t count(Action action) const;
  bool nothing_matched() const { return targets.empty(); }
};

std::string_view to_string(ReasonKind kind);
std::string_view to_string(Action action);
// "listed on GPU 0", "inherited holder of gone PID 4242", ...
std::string describe(const Reason& reason);

}  // namespace gpureap::reap

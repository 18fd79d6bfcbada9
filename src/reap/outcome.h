#pragma once
// What became of each target, joined from the plan, the execution and the verification, and
// the exit code that sums it up.
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "reap/executor.h"
#include "reap/plan.h"
#include "reap/verifier.h"

namespace gpureap::reap {

// Names are part of the JSON schema.
enum class OutcomeKind {
  Released,      // gone, and the memory it held (or kept) is back
  StillHeld,     // gone, but the memory is still held (held_by says by whom, if anyone)
  Survived,      // still alive (why says why)
  NotPermitted,  // another user's process, and we are not root
  Refused,       // a safety rule forbids it; not attempted
};

// Exit codes of `gpureap kill`, written into gpureap.kill/v1 by the reaper; cli/exit_codes.h
// lists them with every other command's and checks at compile time that they agree.
inline constexpr int kExitReleased = 0;
inline constexpr int kExitHeld = 1;         // something survived or memory stayed held
inline constexpr int kExitEnvironment = 2;  // usage, permission or environment error
inline constexpr int kExitNoMatch = 3;      // nothing matched

struct Outcome {
  pid_t pid = 0;
  OutcomeKind kind = OutcomeKind::Refused;
  std::vector<int> signals;
  std::optional<int> exited_after;  // empty when it exited before any signal
  std::optional<std::chrono::system_clock::time_point> exited_at;
  std::optional<uint64_t> released_bytes;  // its own listed memory that came back
  std::optional<long long> release_ms;     // from its exit to the snapshot that showed it back
  std::vector<Holder> held_by;
  std::optional<std::string> wchan;
  std::optional<Parent> parent;  // for zombies: who has to reap them
  std::string why;
};

// What became of a gone listed PID whose keepers were killed.
struct GoneOutcome {
  pid_t pid = 0;
  bool released = false;
  bool attempted = false;  // every keeper exited, so its release was awaited
  std::optional<uint64_t> bytes;
  std::optional<long long> release_ms;  // from its last keeper's exit
  std::vector<Holder> held_by;
};

struct GpuFreed {
  unsigned index = 0;
  uint64_t bytes = 0;  // known memory of the listings released on it
  std::optional<uint64_t> used_before, used_after;
  bool known = false;  // a listing released on it had a figure (else bytes is no figure)
};

struct Timing {
  std::chrono::system_clock::time_point started{};                 // planning began
  std::optional<std::chrono::system_clock::time_point> signalled;  // execution began
  std::optional<std::chrono::system_clock::time_point> last_exit;
  std::optional<std::chrono::system_clock::time_point> verified;
  std::chrono::system_clock::time_point report{};  // just before printing
};

// How long the reclaim took: from the first signal (not from the plan, nor the time a person took
// to answer its question) to the verification that ended it.
std::chrono::milliseconds reclaim_time(const Timing& timing);

struct Report {
  std::vector<Outcome> outcomes;  // one per plan target, in plan order
  std::vector<GoneOutcome> gone;
  std::vector<GpuFreed> freed;
  int polls = 0;
  Timing timing;
  int exit_code = kExitReleased;
};

// The report of an executed plan.
Report compose(const Plan& plan, const std::vector<Execution>& executions,
               const Verification& verification);
// The memory the kill got back, over every GPU: the known figures of the listings released.
// Empty when no released listing has a figure (no driver, a driver that does not say, or a
// target that was listed nowhere): unknown, or nothing of its own, is never "0 B released".
std::optional<uint64_t> freed_bytes(const Report& report);
// The exit code of a plan that is not executed (dry run, declined): 0, 2 or 3.
int plan_exit_code(const Plan& plan);

std::string_view to_string(OutcomeKind kind);
// Who still holds memory, as words: "4250 (python), 4251 (python)"; names escaped to one line.
std::string holders_text(const std::vector<Holder>& held);

}  // namespace gpureap::reap

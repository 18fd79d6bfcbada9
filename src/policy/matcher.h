#pragma once
// Which rows of a snapshot a policy matches, and why: every condition of the policy is
// checked on every row and explained, so `gpureap policy test` can say why a process is or is
// not matched and the audit log can say why one was acted on. Pure over the snapshot; the
// history (for `idle`) and the exemptions (protected processes, gpureap itself) are passed in.
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/snapshot.h"
#include "policy/policy.h"

namespace gpureap::policy {

enum class Verdict { Pass, Fail, Unknown };

// One condition checked on one row: "user alice", "uses 2.0 GiB (>= 1.0 GiB)".
struct Check {
  std::string condition;  // the policy key: user, command, anomalies, ...
  Verdict verdict = Verdict::Fail;
  std::string detail;
};

struct Evaluation {
  pid_t pid = 0;
  std::optional<uint64_t> start_ticks;  // empty for a PID /proc lacks
  std::vector<unsigned> gpus;           // the GPUs the row uses that the policy looks at
  // Its listed memory on those GPUs, plus what it keeps alive for gone PIDs there (a dead
  // trainer's worker keeps the trainer's memory).
  std::optional<uint64_t> memory_bytes;
  std::map<unsigned, uint64_t> memory_by_gpu;  // the known part of memory_bytes, per GPU
  std::vector<Check> checks;
  std::optional<std::string> exempt;  // why no policy may act on it (protected, gpureap, ...)

  bool matched() const;                      // not exempt, and every check passes
  bool possible() const;                     // not exempt, and no check fails (some may be unknown)
  std::vector<std::string> reasons() const;  // the passing checks' details
  const Check* failed() const;               // the first failing check
};

// Since when the row's SM utilisation on a GPU has stayed below a percentage (the daemon's
// history); empty when it is not below now or is unknown.
using IdleSince = std::function<std::optional<std::chrono::system_clock::time_point>(
    const core::ProcessRow&, unsigned gpu, unsigned below_percent)>;
// Why no policy may act on a row, or empty.
using Exemption = std::function<std::optional<std::string>(const core::ProcessRow&)>;

struct MatchContext {
  const core::Snapshot& snapshot;
  std::chrono::system_clock::time_point now;
  IdleSince idle_since;  // null: `idle` is judged from this snapshot alone (Unknown when below now)
  Exemption exemption;   // null: nothing is exempt
};

// One evaluation per row of the snapshot (device-file holders and listed PIDs), in row order.
std::vector<Evaluation> evaluate(const Policy& policy, const MatchContext& context);

}  // namespace gpureap::policy

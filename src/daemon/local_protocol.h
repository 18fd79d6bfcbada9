#pragma once
// What gpureap's commands and the daemon say to each other over the daemon's local socket: one
// request line of JSON from the client, one JSON document back, then the daemon closes.
//
//   {"command":"evidence","evidence":N,"wire":N,"settle_ms":N}
//                                  (for `ps` and `doctor`: the evidence doctor examines, which
//                                   the command renders with the code of its own scan; "evidence"
//                                   and "wire" are the versions of output/evidence_wire.h and
//                                   output/snapshot_wire.h the command reads: a daemon of
//                                   another version refuses them in words)
//   {"command":"snapshot"}   (the latest sample's inputs, output/snapshot_wire.h)
//   {"command":"releases"}   (the gpureap.releases/v1 document of /api/v1/releases)
//   {"command":"history","since":"6h","until":"..."}   (the gpureap.history/v1 document of
//                                  /api/v1/history, with the daemon's "incident" journal added)
//   {"command":"announce","by":"gpureap kill 4242","signal":"SIGTERM","reason":"...","gpu":N|null,
//    "targets":[{"pid":N,"start_ticks":N,"comm":"...","gpu":N|null}]}
//                                  (a command about to signal or reset: the daemon records who
//                                   asked, the user taken from the socket's peer credentials)
//
//   {"ok":true,"output":"...","warnings":["..."],"snapshot_age_ms":N,"exit_code":N}
//   {"ok":true,"snapshot_age_ms":N,"first_kept":bool,"stalled_job_critical_after_ms":N,
//    "evidence":{...}}   (to "evidence")
//   {"ok":false,"error":"..."}
//
// Both sides parse what the other sent strictly: a request with a field this daemon does not
// know is refused (so an older daemon never silently ignores an option), and an answer that is
// not exactly this makes the client scan on its own. The daemon renders nothing a command
// prints: `ps` and `doctor` get the evidence and render it as they render their own scan. A
// request older clients sent ("ps" and "doctor" with their options) is refused in words.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/result.h"
#include "doctor/examine.h"

namespace gpureap::daemon {

inline constexpr const char* kDefaultLocalSocket = "/run/gpureap/gpureap.sock";
// Names another socket for both sides: the tests' daemons and clients, a second daemon.
inline constexpr const char* kLocalSocketEnv = "GPUREAP_DAEMON_SOCKET";
// The longest request line, its newline included.
inline constexpr size_t kMaxRequestBytes = 4096;

// The socket the commands try, and the one a daemon serves when its config leaves
// `local_socket` out: $GPUREAP_DAEMON_SOCKET when set (empty: none), else kDefaultLocalSocket.
std::string default_local_socket();

// `gpureap ps` and `gpureap doctor` (without --fix): the evidence of the latest sample, with
// one taken `settle` before it when the latest shows memory that may still be dropping. The
// versions are the wires' the command reads; the daemon refuses others.
struct EvidenceRequest {
  int evidence = 0;  // output::kEvidenceWireVersion
  int wire = 0;      // output::kSnapshotWireVersion
  std::chrono::milliseconds settle{0};

  // This build's versions.
  static EvidenceRequest current(std::chrono::milliseconds settle);
};

// `gpureap top`: the latest sample's inputs, which the client joins again.
struct SnapshotRequest {};

// `gpureap kill`: the final closes of GPU files the kernel reported, to date its releases.
struct ReleasesRequest {};

// `gpureap report`: the history over a span, as /api/v1/history gives it; `since` as that reads
// it (a duration, a Unix time, an RFC 3339 time).
struct HistoryRequest {
  std::string since = "6h";
  std::optional<std::string> until;  // empty: now
};

// A command that is about to signal processes (`kill`, `doctor --fix`, `top`'s kill, `run`'s
// teardown) or reset a GPU (`reset`) says so first: what, why and as which command. The daemon
// records it in its audit log and its incident journal, with the user it reads from the
// socket's peer credentials (never from the message), so the report can say who ended what.
struct AnnouncedTarget {
  pid_t pid = 0;
  uint64_t start_ticks = 0;  // 0: unknown
  std::string comm;          // untrusted
  std::optional<unsigned> gpu;
};
inline constexpr size_t kMaxAnnouncedTargets = 24;  // a request line stays under 4 KiB
struct AnnounceRequest {
  std::string by;      // "gpureap kill 4242": the command line in short
  std::string signal;  // "SIGTERM"; "reset" for a GPU reset
  std::string reason;  // why these processes: the plan's words
  std::optional<unsigned> gpu;
  std::vector<AnnouncedTarget> targets;  // at most kMaxAnnouncedTargets
  size_t more = 0;                       // targets left out of the list
};

using Request = std::variant<EvidenceRequest, SnapshotRequest, ReleasesRequest, HistoryRequest,
                             AnnounceRequest>;

// Cuts an announcement until its line fits kMaxRequestBytes (names that escape to six bytes a
// byte can make a long list too long): targets go first (counted in `more`), then the reason.
void fit_announcement(AnnounceRequest& request);

// The line a client sends, newline included.
std::string request_line(const Request& request);
// The request in a line (its newline may be left on); an error says what is wrong with it.
core::Result<Request> parse_request(std::string_view line);

struct Answer {
  std::string output;                 // stdout, exactly as the command prints it
  std::vector<std::string> warnings;  // stderr lines
  int64_t snapshot_age_ms = 0;
  int exit_code = 0;
};

std::string answer_text(const Answer& answer);
std::string error_text(const std::string& message);
// An ok:true answer; anything else (ok:false with its error, malformed) is an error.
core::Result<Answer> parse_answer(std::string_view text);

// The answer to "evidence": what the daemon holds for doctor, and whether a snapshot from
// `settle` before the latest was kept (false: `evidence.first` is the latest, and a doctor that
// must settle cannot be answered).
struct EvidenceAnswer {
  doctor::Evidence evidence;
  bool first_kept = true;
  int64_t snapshot_age_ms = 0;
  // The daemon's stalled_job_critical_after, which doctor's Scope takes on this evidence.
  std::chrono::milliseconds stalled_job_critical_after{};
};
// The answer around `evidence_wire`, the evidence's wire text (output::evidence_to_wire_text):
// the daemon builds that once per sample and only this envelope per request.
std::string evidence_answer_text(std::string_view evidence_wire, bool first_kept,
                                 int64_t snapshot_age_ms,
                                 std::chrono::milliseconds stalled_job_critical_after);
core::Result<EvidenceAnswer> parse_evidence_answer(std::string_view text);

// A refusal that says the two sides speak different versions of this protocol: the daemon
// called the command's request bad (a request gpureap builds itself is bad only to another
// version), or its evidence is of another version.
bool is_version_refusal(const core::Error& error);

}  // namespace gpureap::daemon

#pragma once
// The daemon's answer to one request on its local socket (daemon/local_protocol.h): data of the
// latest published sample (the evidence doctor examines, top's snapshot, the releases, the
// history), never text a command prints: each command renders it as it renders its own scan.
#include <chrono>
#include <string>
#include <string_view>

#include "daemon/holder_tracker.h"
#include "daemon/incident.h"
#include "daemon/sample_body.h"
#include "history/history.h"
#include "sample/sample.h"

namespace gpureap::daemon {

// The evidence of the latest sample as every client of a kind gets it, encoded once per
// sample (sample_body.h): a snapshot of a large node is a megabyte of wire, too much to encode
// again for each `ps`. One body for root and the daemon's own user, one for anyone else; an
// answer with an earlier snapshot to settle on is encoded for its request alone.
struct EvidenceBodies {
  BuildGate gate;
  SampleBody privileged{gate};
  SampleBody restricted{gate};
};

// Who asks, as the socket's peer credentials say (never the message's word).
struct Peer {
  uid_t uid = 0;
  // The peer's PIDs are this daemon's: its PID namespace is the daemon's own. An announcement
  // from another one names other processes, or none, under its numbers.
  bool same_pid_namespace = true;
};

// The answer document to `request` (one line, as read from the socket) on `sample` (null
// before the first one), `now` giving its age, and the releases `tracker` kept (null: the
// daemon follows no kernel events), and the `history` (null: "history" is refused). Never
// throws: every failure is ok:false. For `peer`, the evidence holds lines of root-only files
// only for root and the daemon's own user, and `incidents` (null: "announce" is refused) records
// announcements as from that user, and refuses them from another PID namespace; it adds the
// incident journal to the history document. `bodies` (null: none kept) keeps the evidence encoded
// for the sample.
std::string local_answer(std::string_view request,
                         const std::shared_ptr<const sample::Sample>& sample,
                         const HolderTracker* tracker, std::chrono::steady_clock::time_point now,
                         const history::History* history = nullptr, Incidents* incidents = nullptr,
                         Peer peer = {}, EvidenceBodies* bodies = nullptr);

}  // namespace gpureap::daemon

#pragma once
// The daemon's answer to one request on its local socket (daemon/local_protocol.h): data of the
// latest published sample (the evidence doctor examines, top's snapshot, the releases, the
// history), never text a command prints: each command renders it as it renders its own scan.
#include <chrono>
#include <string>
#include <string_view>

#include "daemon/holder_tracker.h"
#include "daemon/incident.h"
#include "history/history.h"
#include "sample/sample.h"

namespace gpureap::daemon {

// The answer document to `request` (one line, as read from the socket) on `sample` (null
// before the first one), `now` giving its age, and the releases `tracker` kept (null: the
// daemon follows no kernel events), and the `history` (null: "history" is refused). Never
// throws: every failure is ok:false. `peer_uid` is the socket's peer credentials: the evidence
// holds lines of root-only files only for root and the daemon's own user, and `incidents` (null:
// "announce" is refused) records announcements as from that user; it adds the incident journal
// to the history document.
std::string local_answer(std::string_view request, const sample::Sample* sample,
                         const HolderTracker* tracker, std::chrono::steady_clock::time_point now,
                         const history::History* history = nullptr, Incidents* incidents = nullptr,
                         uid_t peer_uid = 0);

}  // namespace gpureap::daemon

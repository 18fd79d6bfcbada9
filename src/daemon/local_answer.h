#pragma once
// The daemon's answer to one request on its local socket (daemon/local_protocol.h): the latest
// published sample through the very functions the commands render with on their own scan.
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
// throws: every failure is ok:false. `incidents` (null: "announce" is refused) records
// announcements as from `peer_uid`, the socket's peer credentials, and adds the incident journal
// to the history document.
std::string local_answer(std::string_view request, const sample::Sample* sample,
                         const HolderTracker* tracker, std::chrono::steady_clock::time_point now,
                         const history::History* history = nullptr, Incidents* incidents = nullptr,
                         uid_t peer_uid = 0);

}  // namespace gpureap::daemon

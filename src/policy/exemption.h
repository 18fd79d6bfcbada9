#pragma once
// The rows no policy may act on, whatever it matches: PID 1, kernel threads, gpureap and the
// processes it runs under, and the protected list (display servers, GPU management daemons).
// The reaper refuses them too; saying it up front keeps them out of matches and the audit log.
#include "core/snapshot.h"
#include "policy/matcher.h"

namespace gpureap::policy {

// For the processes of this snapshot (gpureap's ancestors are looked up in it).
Exemption exemption_for(const core::Snapshot& snapshot);

}  // namespace gpureap::policy

#pragma once
// The daemon's side of the report's incident page: the journal of who held each GPU and what
// happened to them (history/journal.h), fed by every sample and by the commands' announcements
// on the local socket, which it also writes to the audit log; and the `incident` part of the
// history document: the GPUs' names, the lanes and events of a span, and the state now with
// each problem's remedy (doctor's own).
#include <sys/types.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "audit/writer.h"
#include "daemon/holder_tracker.h"
#include "daemon/local_protocol.h"
#include "history/journal.h"
#include "sample/sample.h"

namespace gpureap::daemon {

class Incidents final : public sample::SampleConsumer {
 public:
  // `audit` may be null (no audit log): announcements are then only in the journal.
  Incidents(std::shared_ptr<audit::AuditLog> audit, history::JournalLimits limits);

  void on_sample(const sample::Sample& sample, const history::History& history) override;
  void set_window(std::chrono::milliseconds window);

  // A command's announcement, from a peer whose uid the socket's credentials gave (never the
  // message's word). Recorded in the journal and, per target, in the audit log.
  void announce(const AnnounceRequest& request, uid_t peer_uid, const std::string& host);

  // The "incident" object of the history document over [since, until], with `latest` (may be
  // null) for the GPUs' names and the state now.
  nlohmann::json document(std::chrono::system_clock::time_point since,
                          std::chrono::system_clock::time_point until,
                          const sample::Sample* latest) const;

  const history::Journal& journal() const { return journal_; }

  // The holder tracker whose events time the lanes' starts and ends exactly (null: the
  // samples' times). Set once the tracker runs, while samples may already flow.
  void set_tracker(std::shared_ptr<const HolderTracker> tracker);

 private:
  std::shared_ptr<audit::AuditLog> audit_;
  history::Journal journal_;
  history::JournalLimits limits_;
  mutable std::mutex tracker_mutex_;
  std::shared_ptr<const HolderTracker> tracker_;
};

// One line for a person: "gpureap kill 4242 (root)".
std::string actor_text(const std::string& command, const std::string& user);

}  // namespace gpureap::daemon

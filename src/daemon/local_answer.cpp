#include "daemon/local_answer.h"

#include <unistd.h>

#include <algorithm>
#include <exception>
#include <variant>

#include "daemon/local_protocol.h"
#include "daemon/releases_document.h"
#include "doctor/settle.h"
#include "export/history_since.h"
#include "output/evidence_wire.h"
#include "output/snapshot_json.h"
#include "output/snapshot_wire.h"

namespace gpureap::daemon {
namespace {

using std::chrono::milliseconds;

// The peer could read every file the daemon read: root, or the daemon's own user.
doctor::Reader reader_of(uid_t peer_uid) {
  return peer_uid == 0 || peer_uid == ::geteuid() ? doctor::Reader::Privileged
                                                  : doctor::Reader::Anyone;
}

// What `reader` may receive of the daemon's evidence. The socket admits root and the daemon's own
// user only; were its mode and peer check loosened, anyone else would still get no line of a
// file only root reads: neither the work server's log (mode 0600) nor the kernel log's records
// (their reading needs CAP_SYSLOG), whose absence doctor then says in its own words.
doctor::Evidence for_reader(doctor::Evidence evidence, doctor::Reader reader) {
  if (reader == doctor::Reader::Privileged) return evidence;
  evidence.work_server_log.clear();
  if (evidence.kernel) {
    core::KernelLog withheld;
    withheld.problem =
        "the daemon gives the kernel log's records only to root and to its own user: findings "
        "from the kernel log are left out";
    evidence.kernel = std::make_shared<const core::KernelLog>(std::move(withheld));
  }
  return evidence;
}

// The sample's evidence for `reader`, with `first` as the snapshot to settle on (the latest
// itself when there is none), as wire text.
std::string evidence_text(const sample::Sample& sample, std::shared_ptr<const core::Snapshot> first,
                          doctor::Reader reader) {
  doctor::Evidence e{std::move(first), sample.snapshot, sample.ipc_residue, sample.kernel_log};
  e.work_server_log = sample.work_server_log;
  return output::evidence_to_wire_text(for_reader(std::move(e), reader));
}

// The evidence of the latest sample, with the one kept --settle before it where doctor would
// settle on some GPU (the command, which knows its --gpu, decides whether it must).
std::string evidence(const EvidenceRequest& r, const std::shared_ptr<const sample::Sample>& sample,
                     milliseconds age, uid_t peer_uid, EvidenceBodies* bodies) {
  auto first = sample->snapshot;
  bool first_kept = true;
  if (doctor::needs_settle(*sample->snapshot, std::nullopt)) {
    auto earlier = sample->taken_before(r.settle);
    first_kept = earlier != nullptr;
    if (earlier) first = std::move(earlier);
  }
  const auto reader = reader_of(peer_uid);
  auto answer = [&](std::string_view text) {
    return evidence_answer_text(text, first_kept, age.count(), sample->stalled_job_critical_after);
  };
  if (!bodies || first != sample->snapshot)
    return answer(evidence_text(*sample, std::move(first), reader));
  auto& body = reader == doctor::Reader::Privileged ? bodies->privileged : bodies->restricted;
  return answer(*body.of(
      sample, [&](const sample::Sample& s) { return evidence_text(s, s.snapshot, reader); }));
}

// The answer to each request in one visit: a request added to the protocol without its answer
// does not compile.
struct Answerer {
  const std::shared_ptr<const sample::Sample>& sample;
  const HolderTracker* tracker;
  std::chrono::steady_clock::time_point now;
  const history::History* history;
  Incidents* incidents;
  Peer peer;
  EvidenceBodies* bodies;

  std::string operator()(const AnnounceRequest& a) const {
    if (!incidents) return error_text("this daemon keeps no incident journal");
    if (!peer.same_pid_namespace)
      return error_text(
          "the announcement comes from another PID namespace than this daemon's: its PIDs name "
          "other processes here, and nothing was recorded");
    incidents->announce(a, peer.uid, sample && sample->snapshot ? sample->snapshot->hostname : "");
    return answer_text({"", {}, 0, 0});
  }
  std::string operator()(const ReleasesRequest&) const {
    return answer_text({output::dump_json(releases_document(tracker), -1), {}, 0, 0});
  }
  std::string operator()(const EvidenceRequest& r) const {
    if (!sampled()) return error_text("no sample taken yet");
    return evidence(r, sample, age(), peer.uid, bodies);
  }
  std::string operator()(const HistoryRequest& r) const {
    if (!sampled()) return error_text("no sample taken yet");
    if (!history) return error_text("this daemon keeps no history here");
    auto since = exporter::parse_since(r.since, std::chrono::system_clock::now());
    if (!since) return error_text("since: " + since.error().message);
    auto wall = std::chrono::system_clock::now();
    auto until = wall;
    if (r.until) {
      auto u = exporter::parse_since(*r.until, wall);
      if (!u) return error_text("until: " + u.error().message);
      until = *u;
    }
    auto doc = history_document(*history, *sample->snapshot, *since, std::nullopt, tracker);
    if (incidents) doc["incident"] = incidents->document(*since, until, sample.get());
    return answer_text({output::dump_json(doc, -1), {}, age().count(), 0});
  }
  // top: the inputs of the latest snapshot, which the client joins again exactly.
  std::string operator()(const SnapshotRequest&) const {
    if (!sampled()) return error_text("no sample taken yet");
    return answer_text(
        {output::snapshot_inputs_to_wire_text(*sample->snapshot), {}, age().count(), 0});
  }

  bool sampled() const { return sample && sample->snapshot; }
  milliseconds age() const {
    return std::max(std::chrono::duration_cast<milliseconds>(now - sample->taken), milliseconds(0));
  }
};

}  // namespace

std::string local_answer(std::string_view line, const std::shared_ptr<const sample::Sample>& sample,
                         const HolderTracker* tracker, std::chrono::steady_clock::time_point now,
                         const history::History* history, Incidents* incidents, Peer peer,
                         EvidenceBodies* bodies) {
  auto request = parse_request(line);
  if (!request) return error_text(request.error().message);
  try {
    return std::visit(Answerer{sample, tracker, now, history, incidents, peer, bodies}, *request);
  } catch (const std::exception& e) {
    // A bug in an answer must cost that answer, never the daemon.
    return error_text(std::string("cannot answer: ") + e.what());
  }
}

}  // namespace gpureap::daemon

#include "daemon/local_answer.h"

#include <unistd.h>

#include <algorithm>
#include <exception>

#include "core/duration.h"
#include "core/gpu_resolve.h"
#include "daemon/local_protocol.h"
#include "daemon/releases_document.h"
#include "doctor/examine.h"
#include "doctor/finding_code.h"
#include "doctor/settle.h"
#include "export/history_json.h"
#include "output/doctor_command.h"
#include "output/kernel_note.h"
#include "output/ps_render.h"
#include "output/snapshot_json.h"
#include "output/snapshot_wire.h"
#include "reap/safety.h"

namespace gpureap::daemon {
namespace {

using std::chrono::milliseconds;

std::string answer_of(output::CommandOutput rendered, milliseconds age) {
  return answer_text(
      {std::move(rendered.out), std::move(rendered.err), age.count(), rendered.exit_code});
}

std::string ps(const PsRequest& r, const sample::Sample& sample, milliseconds age) {
  auto o = r.render_options();
  o.daemon_age = age;
  auto rendered = output::render_ps_command(*sample.snapshot, o);
  // The line the command adds itself when the kernel logged a critical GPU error.
  if (sample.kernel_log)
    if (auto note = output::kernel_note(*sample.kernel_log)) rendered.err.push_back(*note);
  return answer_of(std::move(rendered), age);
}

// doctor over the latest sample and one taken --settle before it. What the daemon cannot
// answer as the command would (a GPU it does not have, no sample that old yet) is refused: the
// command then runs on its own and says it in its own words.
std::string doctor(const DoctorRequest& r, const sample::Sample& sample, milliseconds age,
                   uid_t peer_uid) {
  auto only = doctor::parse_finding_codes(r.only);
  if (!only) return error_text("bad request: \"only\": " + only.error().message);
  doctor::UnattributedThreshold threshold;
  if (r.unattributed_threshold) {
    auto t = doctor::parse_unattributed_threshold(*r.unattributed_threshold);
    if (!t) return error_text("bad request: \"unattributed_threshold\": " + t.error().message);
    threshold = *t;
  }
  const core::Snapshot& last = *sample.snapshot;
  std::optional<unsigned> gpu;
  std::optional<core::GpuPlace> instance;
  if (r.gpu || r.gpu_place) {
    // A GPU or instance it does not know is refused in the resolver's words; the command then
    // resolves it on its own scan and says the same. Without a driver doctor still diagnoses
    // from /proc, as the command does.
    auto resolved = core::resolve_gpu(last, r.gpu_place ? *r.gpu_place : std::to_string(*r.gpu));
    if (resolved.problem && !resolved.problem->driver_down)
      return error_text(resolved.problem->error.message);
    gpu = resolved.place.index;
    if (resolved.place.gpu_instance) instance = resolved.place;
  }
  std::shared_ptr<const core::Snapshot> first = sample.snapshot;
  if (doctor::needs_settle(last, gpu)) {
    first = sample.taken_before(r.settle);
    if (!first)
      return error_text("no sample kept from " + core::format_duration(r.settle) +
                        " before the latest");
  }
  // The kernel log the daemon follows; the kernel stacks of D-state holders are not read here
  // (its own findings tell their kind from the wait channel).
  doctor::Evidence evidence{first, sample.snapshot, sample.ipc_residue, sample.kernel_log};
  evidence.work_server_log = sample.work_server_log;
  // The socket admits root and the daemon's own user: each could read what the daemon read.
  auto reader = peer_uid == 0 || peer_uid == ::geteuid() ? doctor::Reader::Privileged
                                                         : doctor::Reader::Anyone;
  auto findings = doctor::examine(evidence,
                                  {.gpu = gpu,
                                   .instance = instance,
                                   .only = *only,
                                   .unattributed = threshold,
                                   .reader = reader},
                                  reap::is_protected_process);
  return answer_of(output::render_doctor_command(last, findings,
                                                 {.json = r.json,
                                                  .color = r.color,
                                                  .gpu = gpu,
                                                  .daemon_age = age,
                                                  .verbose = r.verbose,
                                                  .width = r.width.value_or(0),
                                                  .unicode = r.unicode,
                                                  .instance = instance}),
                   age);
}

}  // namespace

std::string local_answer(std::string_view line, const sample::Sample* sample,
                         const HolderTracker* tracker, std::chrono::steady_clock::time_point now,
                         const history::History* history, Incidents* incidents, uid_t peer_uid) {
  auto request = parse_request(line);
  if (!request) return error_text(request.error().message);
  if (auto* a = std::get_if<AnnounceRequest>(&*request)) {
    if (!incidents) return error_text("this daemon keeps no incident journal");
    incidents->announce(*a, peer_uid, sample && sample->snapshot ? sample->snapshot->hostname : "");
    return answer_text({"", {}, 0, 0});
  }
  if (std::holds_alternative<ReleasesRequest>(*request))
    return answer_text({output::dump_json(releases_document(tracker), -1), {}, 0, 0});
  if (!sample || !sample->snapshot) return error_text("no sample taken yet");
  try {
    auto age =
        std::max(std::chrono::duration_cast<milliseconds>(now - sample->taken), milliseconds(0));
    if (auto* r = std::get_if<PsRequest>(&*request)) return ps(*r, *sample, age);
    if (auto* r = std::get_if<DoctorRequest>(&*request)) return doctor(*r, *sample, age, peer_uid);
    if (auto* r = std::get_if<HistoryRequest>(&*request)) {
      if (!history) return error_text("this daemon keeps no history here");
      auto since = exporter::parse_since(r->since, std::chrono::system_clock::now());
      if (!since) return error_text("since: " + since.error().message);
      auto wall = std::chrono::system_clock::now();
      auto until = wall;
      if (r->until) {
        auto u = exporter::parse_since(*r->until, wall);
        if (!u) return error_text("until: " + u.error().message);
        until = *u;
      }
      auto doc = history_document(*history, *sample->snapshot, *since, std::nullopt, tracker);
      if (incidents) doc["incident"] = incidents->document(*since, until, sample);
      return answer_text({output::dump_json(doc, -1), {}, age.count(), 0});
    }
    // top: the inputs of the latest snapshot, which the client joins again exactly.
    return answer_text(
        {output::snapshot_inputs_to_wire_text(*sample->snapshot), {}, age.count(), 0});
  } catch (const std::exception& e) {
    // A bug in rendering must cost one answer, never the daemon.
    return error_text(std::string("cannot answer: ") + e.what());
  }
}

}  // namespace gpureap::daemon

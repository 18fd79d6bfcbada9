// The daemon's answers on its local socket: data of the latest sample, never text. `ps` and
// `doctor` get the evidence doctor examines (with a first sample taken --settle before the
// latest) and render it with the code of their own scan; a peer that could not read a root-only
// file gets none of its lines.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <set>

#include "daemon/local_answer.h"
#include "daemon/local_protocol.h"
#include "doctor/diagnose.h"
#include "output/doctor_command.h"
#include "output/ps_render.h"
#include "output/snapshot_json.h"
#include "output/snapshot_wire.h"
#include "reap/safety.h"
#include "snapshot_builders.h"

namespace gpureap::daemon {
namespace {

using namespace gpureap::testing;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

std::shared_ptr<sample::Sample> sample_of(core::Snapshot s, Clock::time_point taken) {
  auto sample = std::make_shared<sample::Sample>();
  sample->sequence = 1;
  sample->snapshot = std::make_shared<const core::Snapshot>(std::move(s));
  sample->taken = taken;
  return sample;
}

core::Result<EvidenceAnswer> ask(const std::shared_ptr<const sample::Sample>& sample,
                                 Clock::time_point now, std::chrono::milliseconds settle = 0ms,
                                 uid_t peer = ::geteuid()) {
  return parse_evidence_answer(local_answer(request_line(EvidenceRequest::current(settle)), sample,
                                            nullptr, now, nullptr, nullptr, Peer{peer}));
}

TEST(DaemonLocalAnswer, PsGetsTheLatestSampleAndRendersItAsItsOwnScan) {
  auto snap = make_snapshot({holder(10, 1, 10)}, {gpu(0, 0, 4 * GiB, {listed(10, 4 * GiB)})});
  auto now = Clock::now();
  auto sample = sample_of(snap, now - 1200ms);
  auto answer = ask(sample, now);
  ASSERT_TRUE(answer.ok()) << answer.error().message;
  EXPECT_EQ(answer->snapshot_age_ms, 1200);
  EXPECT_TRUE(answer->first_kept);
  EXPECT_EQ(answer->evidence.first, answer->evidence.last);  // nothing to settle
  // The client's rendering of the daemon's snapshot is the one of the snapshot itself.
  output::PsRenderOptions o{.tree = true, .width = 100};
  o.daemon_age = 1200ms;
  for (auto format : {output::PsFormat::Table, output::PsFormat::Json, output::PsFormat::Csv}) {
    o.format = format;
    EXPECT_EQ(output::render_ps_command(*answer->evidence.last, o).out,
              output::render_ps_command(snap, o).out);
  }
}

// The answer is data: the evidence and its age, no text a command prints, no exit status.
TEST(DaemonLocalAnswer, TheDaemonRendersNothing) {
  auto now = Clock::now();
  auto sample = sample_of(
      make_snapshot({holder(10, 1, 10)}, {gpu(0, 0, 4 * GiB, {listed(10, 4 * GiB)})}), now);
  auto text = local_answer(request_line(EvidenceRequest::current(5s)), sample, nullptr, now);
  auto doc = nlohmann::json::parse(text);
  std::set<std::string> keys;
  for (const auto& [key, value] : doc.items()) keys.insert(key);
  EXPECT_EQ(keys, (std::set<std::string>{"ok", "snapshot_age_ms", "first_kept",
                                         "stalled_job_critical_after_ms", "evidence"}));
  EXPECT_EQ(text.find("GiB"), std::string::npos) << "a rendered figure in the answer";
  EXPECT_FALSE(parse_answer(text).ok()) << "a text answer where data was asked";
}

// The daemon's own setting reaches the command, which examines the evidence with it as the
// daemon's HTTP findings, metrics and policies do.
TEST(DaemonLocalAnswer, TheDaemonsStalledJobSettingTravelsWithItsEvidence) {
  auto now = Clock::now();
  auto sample = sample_of(
      make_snapshot({holder(10, 1, 10)}, {gpu(0, 0, 4 * GiB, {listed(10, 4 * GiB)})}), now);
  sample->stalled_job_critical_after = 5s;
  auto answer = ask(sample, now);
  ASSERT_TRUE(answer.ok()) << answer.error().message;
  EXPECT_EQ(answer->stalled_job_critical_after, 5s);
  sample->stalled_job_critical_after = 3h;
  EXPECT_EQ(ask(sample, now)->stalled_job_critical_after, 3h);
}

TEST(DaemonLocalAnswer, RefusesBadRequestsAndAnswersNothingBeforeTheFirstSample) {
  auto sample = sample_of(make_snapshot({}, {}), Clock::now());
  auto bad = parse_answer(local_answer("garbage\n", sample, nullptr, Clock::now()));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "bad request: not JSON");
  auto early = ask(nullptr, Clock::now());
  ASSERT_FALSE(early.ok());
  EXPECT_EQ(early.error().message, "no sample taken yet");
  EXPECT_FALSE(is_version_refusal(early.error()));
}

// An older command's request, or one of another version, is refused in words: the command
// never reads an answer of another form.
TEST(DaemonLocalAnswer, AnotherVersionsRequestIsRefusedInWords) {
  auto now = Clock::now();
  auto sample = sample_of(make_snapshot({}, {}), now);
  auto old =
      parse_answer(local_answer(R"({"command":"ps","format":"json"})", sample, nullptr, now));
  ASSERT_FALSE(old.ok());
  EXPECT_NE(old.error().message.find("older than this daemon"), std::string::npos)
      << old.error().message;
  auto newer = EvidenceRequest::current(0ms);
  ++newer.evidence;
  auto refused = parse_evidence_answer(local_answer(request_line(newer), sample, nullptr, now));
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(is_version_refusal(refused.error())) << refused.error().message;
  EXPECT_NE(refused.error().message.find("different gpureap versions"), std::string::npos);
}

TEST(DaemonLocalAnswer, ReleasesAreAnsweredEvenBeforeTheFirstSample) {
  auto answer =
      parse_answer(local_answer(request_line(ReleasesRequest{}), nullptr, nullptr, Clock::now()));
  ASSERT_TRUE(answer.ok()) << answer.error().message;
  // Without a tracker the daemon follows no kernel events, and says so; and whose PIDs its
  // releases would name (its own PID namespace's inode).
  nlohmann::json doc = nlohmann::json::parse(answer->output);
  ASSERT_TRUE(doc["pid_namespace"].is_number_unsigned()) << doc.dump();
  doc.erase("pid_namespace");
  EXPECT_EQ(doc, (nlohmann::json{{"schema", "gpureap.releases/v1"},
                                 {"tracking", "scans"},
                                 {"releases", nlohmann::json::array()}}));
}

TEST(DaemonLocalAnswer, SnapshotIsTheLatestSamplesInputsForTopToJoinAgain) {
  auto now = Clock::now();
  auto snap = make_snapshot({holder(10, 1, 10), holder(11, 10, 10)},
                            {gpu(0, 0, 6 * GiB, {listed(10, 4 * GiB), listed(77, 2 * GiB)})});
  auto sample = sample_of(snap, now - 250ms);
  auto answer = parse_answer(local_answer(request_line(SnapshotRequest{}), sample, nullptr, now));
  ASSERT_TRUE(answer.ok()) << answer.error().message;
  EXPECT_EQ(answer->snapshot_age_ms, 250);
  auto back = output::snapshot_from_wire_text(answer->output);
  ASSERT_TRUE(back.ok()) << back.error().message;
  // Joined again on the client: the same rows and the same ghost as the daemon's.
  EXPECT_EQ(output::snapshot_to_json(*back), output::snapshot_to_json(snap));
  ASSERT_NE(back->ghost(77), nullptr);
}

TEST(DaemonLocalAnswer, ASampleFromTheFutureIsZeroOld) {
  auto now = Clock::now();
  auto sample = sample_of(make_snapshot({}, {}), now + 5s);
  auto answer = ask(sample, now);
  ASSERT_TRUE(answer.ok());
  EXPECT_EQ(answer->snapshot_age_ms, 0);
}

// A machine where PID 77 left the driver's lists during the settle window and PID 88 (gone)
// still holds 1 GiB: the first sample tells "releasing" from "no such process".
core::Snapshot six_seconds_ago() {
  return make_snapshot({}, {gpu(0, 0, 3 * GiB, {listed(77, 2 * GiB), listed(88, GiB)})});
}
core::Snapshot now_snapshot() {
  return make_snapshot({}, {gpu(0, 0, GiB, {listed(88, GiB)})});
}

std::shared_ptr<sample::Sample> with_earlier(Clock::time_point now) {
  auto sample = sample_of(now_snapshot(), now);
  sample->earlier.push_back(
      {now - 1s, std::make_shared<const core::Snapshot>(now_snapshot())});  // the previous one
  sample->earlier.push_back({now - 6s, std::make_shared<const core::Snapshot>(six_seconds_ago())});
  return sample;
}

std::vector<doctor::Finding> local_findings(const core::Snapshot& first,
                                            const core::Snapshot& last) {
  return doctor::diagnose({first, last, {}, std::nullopt, reap::is_protected_process, {}});
}

TEST(DaemonLocalAnswer, DoctorGetsASampleSettleBeforeTheLatestAndFindsWhatDoctorFinds) {
  auto now = Clock::now();
  auto sample = with_earlier(now - 300ms);
  auto answer = ask(sample, now, 5s);
  ASSERT_TRUE(answer.ok()) << answer.error().message;
  EXPECT_TRUE(answer->first_kept);
  EXPECT_EQ(answer->snapshot_age_ms, 300);
  const auto& e = answer->evidence;
  EXPECT_EQ(output::snapshot_to_json(*e.first), output::snapshot_to_json(six_seconds_ago()));
  EXPECT_EQ(output::snapshot_to_json(*e.last), output::snapshot_to_json(now_snapshot()));
  // The client's findings and report on them are doctor's on the daemon's two samples.
  auto served = doctor::examine(e, {}, reap::is_protected_process);
  auto expected = local_findings(six_seconds_ago(), now_snapshot());
  output::DoctorRenderOptions o{.daemon_age = 300ms, .verbose = true};
  auto text = output::render_doctor_command(*e.last, served, o);
  EXPECT_EQ(text.out, output::render_doctor_command(now_snapshot(), expected, o).out);
  // The six-second-old sample was the first: PID 77's memory is coming back, PID 88's is not.
  EXPECT_NE(text.out.find("PID 77 (gone) was listed with 2.0 GiB"), std::string::npos) << text.out;
  EXPECT_EQ(text.exit_code, output::kDoctorExitCritical);
}

TEST(DaemonLocalAnswer, DoctorWithoutASampleThatOldIsToldSoTheCommandSettlesItself) {
  auto now = Clock::now();
  auto sample = with_earlier(now);
  auto answer = ask(sample, now, 10s);
  ASSERT_TRUE(answer.ok()) << answer.error().message;
  EXPECT_FALSE(answer->first_kept);
  // Nothing that needs settling: the latest alone answers, whatever the settle.
  auto calm =
      sample_of(make_snapshot({holder(10, 1, 10)}, {gpu(0, 0, GiB, {listed(10, GiB)})}), now);
  auto plain = ask(calm, now, 10s);
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  EXPECT_TRUE(plain->first_kept);
  EXPECT_EQ(plain->evidence.first, plain->evidence.last);
}

// The kernel log's records and the work server's log (root's files) reach root and the daemon's
// own user, never anyone else: were the socket's mode and peer check loosened, another user's
// answer still holds none of their lines.
TEST(DaemonLocalAnswer, RootOnlyLinesReachOnlyAPeerThatCouldReadThem) {
  auto now = Clock::now();
  auto sample = sample_of(
      make_snapshot({holder(10, 1, 10)}, {gpu(0, 0, 4 * GiB, {listed(10, 4 * GiB)})}), now);
  core::KernelLog log;
  log.read = true;
  log.records = 1;
  core::KernelGpuEvent xid;
  xid.vendor = "nvidia";
  xid.kind = "xid";
  xid.code = 79;
  xid.pci_address = "0000:17:00";
  xid.gpu = 0;
  xid.pid = 10;
  xid.process_name = "secret-trainer";
  xid.detail = "GPU has fallen off the bus (kernel-only detail)";
  xid.level = core::KernelEventLevel::Critical;
  log.events.push_back(xid);
  sample->kernel_log = std::make_shared<const core::KernelLog>(log);
  sample->work_server_log = {"[2026-12-06 10:00:00] server 4242: client 10 faulted (root only)"};

  for (uid_t privileged : {uid_t{0}, ::geteuid()}) {
    auto answer = ask(sample, now, 0ms, privileged);
    ASSERT_TRUE(answer.ok()) << answer.error().message;
    ASSERT_TRUE(answer->evidence.kernel);
    ASSERT_EQ(answer->evidence.kernel->events.size(), 1u);
    EXPECT_EQ(answer->evidence.kernel->events[0].detail, xid.detail);
    EXPECT_EQ(answer->evidence.work_server_log, sample->work_server_log);
  }
  const uid_t other = ::geteuid() == 0 ? 65534 : ::geteuid() + 1;
  const std::string text = local_answer(request_line(EvidenceRequest::current(0ms)), sample,
                                        nullptr, now, nullptr, nullptr, Peer{other});
  for (const char* line : {"secret-trainer", "kernel-only detail", "root only", "faulted"})
    EXPECT_EQ(text.find(line), std::string::npos) << line << " reached uid " << other;
  auto answer = parse_evidence_answer(text);
  ASSERT_TRUE(answer.ok()) << answer.error().message;
  EXPECT_TRUE(answer->evidence.work_server_log.empty());
  ASSERT_TRUE(answer->evidence.kernel);
  EXPECT_TRUE(answer->evidence.kernel->events.empty());
  EXPECT_FALSE(answer->evidence.kernel->read);
  ASSERT_TRUE(answer->evidence.kernel->problem);  // doctor says why its kernel findings are out
  EXPECT_NE(answer->evidence.kernel->problem->find("only to root and to its own user"),
            std::string::npos);
  // The snapshot itself is what the HTTP API serves any local user.
  EXPECT_EQ(output::snapshot_to_json(*answer->evidence.last),
            output::snapshot_to_json(*sample->snapshot));
}

// The evidence the daemon keeps encoded for its latest sample is the evidence it would encode
// for the request: for each kind of reader (root's lines never reach another, whoever asked
// first), for a request that settles on an earlier sample, and for the next sample, never the
// one before.
TEST(DaemonLocalAnswer, KeptEvidenceIsTheEvidenceEncodedForTheRequest) {
  auto now = Clock::now();
  auto sample = with_earlier(now - 300ms);
  sample->work_server_log = {"[2026-12-06 10:00:00] server 4242: client 10 faulted (root only)"};
  const uid_t other = ::geteuid() == 0 ? 65534 : ::geteuid() + 1;
  EvidenceBodies bodies;
  auto answer = [&](const std::shared_ptr<const sample::Sample>& s,
                    std::chrono::milliseconds settle, uid_t peer, EvidenceBodies* kept) {
    return local_answer(request_line(EvidenceRequest::current(settle)), s, nullptr, now, nullptr,
                        nullptr, Peer{peer}, kept);
  };
  for (int round = 0; round < 2; ++round) {  // the second round answers from what was kept
    for (uid_t peer : {::geteuid(), other}) {
      for (std::chrono::milliseconds settle : {0ms, 5000ms}) {
        const auto fresh = answer(sample, settle, peer, nullptr);
        EXPECT_EQ(answer(sample, settle, peer, &bodies), fresh)
            << "round " << round << ", uid " << peer << ", settle " << settle.count() << " ms";
      }
    }
  }
  EXPECT_EQ(answer(sample, 0ms, other, &bodies).find("root only"), std::string::npos);
  EXPECT_NE(answer(sample, 0ms, ::geteuid(), &bodies).find("root only"), std::string::npos);

  auto next = sample_of(
      make_snapshot({holder(10, 1, 10)}, {gpu(0, 0, 4 * GiB, {listed(10, 4 * GiB)})}), now);
  auto kept = parse_evidence_answer(answer(next, 0ms, ::geteuid(), &bodies));
  ASSERT_TRUE(kept.ok()) << kept.error().message;
  EXPECT_EQ(output::snapshot_to_json(*kept->evidence.last),
            output::snapshot_to_json(*next->snapshot));
  EXPECT_EQ(answer(next, 0ms, ::geteuid(), &bodies), answer(next, 0ms, ::geteuid(), nullptr));
}

}  // namespace
}  // namespace gpureap::daemon

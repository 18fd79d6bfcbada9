// The daemon's answers on its local socket: the latest sample through the commands' own
// renderers, and doctor with a first sample taken --settle before it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

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

sample::Sample sample_of(core::Snapshot s, Clock::time_point taken) {
  sample::Sample sample;
  sample.sequence = 1;
  sample.snapshot = std::make_shared<const core::Snapshot>(std::move(s));
  sample.taken = taken;
  return sample;
}

TEST(DaemonLocalAnswer, IsWhatPsRendersWithTheSamplesAge) {
  auto snap = make_snapshot({holder(10, 1, 10)}, {gpu(0, 0, 4 * GiB, {listed(10, 4 * GiB)})});
  auto now = Clock::now();
  auto sample = sample_of(snap, now - 1200ms);
  PsRequest request{.format = output::PsFormat::Table, .tree = true, .width = 100};
  auto answer = parse_answer(local_answer(request_line(request), &sample, nullptr, now));
  ASSERT_TRUE(answer.ok()) << answer.error().message;
  EXPECT_EQ(answer->snapshot_age_ms, 1200);
  EXPECT_EQ(answer->exit_code, 0);
  output::PsRenderOptions o{.tree = true, .width = 100};
  o.daemon_age = 1200ms;
  EXPECT_EQ(answer->output, output::render_ps_command(snap, o).out);
  EXPECT_NE(answer->output.find("snapshot 1.2 s old"), std::string::npos);
}

TEST(DaemonLocalAnswer, RefusesBadRequestsAndAnswersNothingBeforeTheFirstSample) {
  auto sample = sample_of(make_snapshot({}, {}), Clock::now());
  auto bad = parse_answer(local_answer("garbage\n", &sample, nullptr, Clock::now()));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "bad request: not JSON");
  auto early =
      parse_answer(local_answer(request_line(PsRequest{}), nullptr, nullptr, Clock::now()));
  ASSERT_FALSE(early.ok());
  EXPECT_EQ(early.error().message, "no sample taken yet");
}

TEST(DaemonLocalAnswer, ReleasesAreAnsweredEvenBeforeTheFirstSample) {
  auto answer =
      parse_answer(local_answer(request_line(ReleasesRequest{}), nullptr, nullptr, Clock::now()));
  ASSERT_TRUE(answer.ok()) << answer.error().message;
  // Without a tracker the daemon follows no kernel events, and says so.
  EXPECT_EQ(nlohmann::json::parse(answer->output),
            (nlohmann::json{{"schema", "gpureap.releases/v1"},
                            {"tracking", "scans"},
                            {"releases", nlohmann::json::array()}}));
}

TEST(DaemonLocalAnswer, SnapshotIsTheLatestSamplesInputsForTopToJoinAgain) {
  auto now = Clock::now();
  auto snap = make_snapshot({holder(10, 1, 10), holder(11, 10, 10)},
                            {gpu(0, 0, 6 * GiB, {listed(10, 4 * GiB), listed(77, 2 * GiB)})});
  auto sample = sample_of(snap, now - 250ms);
  auto answer = parse_answer(local_answer(request_line(SnapshotRequest{}), &sample, nullptr, now));
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
  auto answer = parse_answer(local_answer(request_line(PsRequest{}), &sample, nullptr, now));
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

sample::Sample with_earlier(Clock::time_point now) {
  auto sample = sample_of(now_snapshot(), now);
  sample.earlier.push_back(
      {now - 1s, std::make_shared<const core::Snapshot>(now_snapshot())});  // the previous one
  sample.earlier.push_back({now - 6s, std::make_shared<const core::Snapshot>(six_seconds_ago())});
  return sample;
}

std::vector<doctor::Finding> local_findings(const core::Snapshot& first,
                                            const core::Snapshot& last) {
  return doctor::diagnose({first, last, {}, std::nullopt, reap::is_protected_process, {}});
}

TEST(DaemonLocalAnswer, DoctorIsWhatDoctorRendersOnASampleSettleBeforeTheLatest) {
  auto now = Clock::now();
  auto sample = with_earlier(now - 300ms);
  // -v: PID 77's release is an info finding.
  DoctorRequest request{.json = false, .settle = 5s, .verbose = true};
  auto answer = parse_answer(local_answer(request_line(request), &sample, nullptr, now));
  ASSERT_TRUE(answer.ok()) << answer.error().message;
  auto findings = local_findings(six_seconds_ago(), now_snapshot());
  auto expected = output::render_doctor_command(now_snapshot(), findings,
                                                {.daemon_age = 300ms, .verbose = true});
  EXPECT_EQ(answer->output, expected.out);
  EXPECT_EQ(answer->exit_code, expected.exit_code);
  EXPECT_EQ(answer->snapshot_age_ms, 300);
  // The six-second-old sample was the first: PID 77's memory is coming back, PID 88's is not.
  EXPECT_NE(answer->output.find("PID 77 (gone) was listed with 2.0 GiB"), std::string::npos)
      << answer->output;
  EXPECT_NE(answer->output.find("snapshot 0.3 s old"), std::string::npos);
  EXPECT_EQ(answer->exit_code, output::kDoctorExitCritical);
}

TEST(DaemonLocalAnswer, DoctorJsonNamesTheDaemonAndKeepsOnlyTheCodesAsked) {
  auto now = Clock::now();
  auto sample = with_earlier(now);
  DoctorRequest request{.json = true, .settle = 5s, .only = {"releasing"}};
  auto answer = parse_answer(local_answer(request_line(request), &sample, nullptr, now));
  ASSERT_TRUE(answer.ok()) << answer.error().message;
  auto doc = nlohmann::json::parse(answer->output);
  EXPECT_EQ(doc["source"], (nlohmann::json{{"kind", "daemon"}, {"age_ms", 0}}));
  ASSERT_EQ(doc["findings"].size(), 1u) << doc.dump(1);
  EXPECT_EQ(doc["findings"][0]["code"], "releasing");
  EXPECT_EQ(answer->exit_code, output::kDoctorExitHealthy);  // --only keeps an info finding
}

TEST(DaemonLocalAnswer, DoctorWithoutASampleThatOldIsRefusedSoTheCommandSettlesItself) {
  auto now = Clock::now();
  auto sample = with_earlier(now);
  DoctorRequest request{.settle = 10s};
  auto refused = parse_answer(local_answer(request_line(request), &sample, nullptr, now));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message, "no sample kept from 10s before the latest");
  // Nothing that needs settling: the latest alone answers, whatever the settle.
  auto calm =
      sample_of(make_snapshot({holder(10, 1, 10)}, {gpu(0, 0, GiB, {listed(10, GiB)})}), now);
  auto answer = parse_answer(local_answer(request_line(request), &calm, nullptr, now));
  ASSERT_TRUE(answer.ok()) << answer.error().message;
  EXPECT_EQ(answer->exit_code, output::kDoctorExitHealthy);
}

TEST(DaemonLocalAnswer, DoctorRefusesWhatTheCommandReportsInItsOwnWords) {
  auto now = Clock::now();
  auto sample = with_earlier(now);
  DoctorRequest missing_gpu{.gpu = 9};
  auto refused = parse_answer(local_answer(request_line(missing_gpu), &sample, nullptr, now));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message, "GPU 9 does not exist");  // core::resolve_gpu's words
  DoctorRequest bad_code{.only = {"no-such-code"}};
  auto bad = parse_answer(local_answer(request_line(bad_code), &sample, nullptr, now));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("bad request: \"only\""), std::string::npos);
  DoctorRequest bad_threshold{.unattributed_threshold = "lots"};
  bad = parse_answer(local_answer(request_line(bad_threshold), &sample, nullptr, now));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("bad request: \"unattributed_threshold\""), std::string::npos);
}

}  // namespace
}  // namespace gpureap::daemon

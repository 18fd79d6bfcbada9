// The daemon's answer to `gpureap ps`: the latest sample through ps's own renderer.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "daemon/ps_answer.h"
#include "daemon/ps_protocol.h"
#include "output/ps_render.h"
#include "snapshot_builders.h"

namespace gpureap::daemon {
namespace {

using namespace gpureap::testing;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

engine::Sample sample_of(core::Snapshot s, Clock::time_point taken) {
  engine::Sample sample;
  sample.sequence = 1;
  sample.snapshot = std::make_shared<const core::Snapshot>(std::move(s));
  sample.taken = taken;
  return sample;
}

TEST(DaemonPsAnswer, IsWhatPsRendersWithTheSamplesAge) {
  auto snap = make_snapshot({holder(10, 1, 10)}, {gpu(0, 0, 4 * GiB, {listed(10, 4 * GiB)})});
  auto now = Clock::now();
  auto sample = sample_of(snap, now - 1200ms);
  PsRequest request{.format = output::PsFormat::Table, .tree = true, .width = 100};
  auto answer = parse_answer(ps_answer(request_line(request), &sample, now));
  ASSERT_TRUE(answer.ok()) << answer.error().message;
  EXPECT_EQ(answer->snapshot_age_ms, 1200);
  EXPECT_EQ(answer->exit_code, 0);
  output::PsRenderOptions o{.tree = true, .width = 100};
  o.daemon_age = 1200ms;
  EXPECT_EQ(answer->output, output::render_ps_command(snap, o).out);
  EXPECT_NE(answer->output.find("snapshot 1.2 s old"), std::string::npos);
}

TEST(DaemonPsAnswer, RefusesBadRequestsAndAnswersNothingBeforeTheFirstSample) {
  auto sample = sample_of(make_snapshot({}, {}), Clock::now());
  auto bad = parse_answer(ps_answer("garbage\n", &sample, Clock::now()));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "bad request: not JSON");
  auto early = parse_answer(ps_answer(request_line({}), nullptr, Clock::now()));
  ASSERT_FALSE(early.ok());
  EXPECT_EQ(early.error().message, "no sample taken yet");
}

TEST(DaemonPsAnswer, ASampleFromTheFutureIsZeroOld) {
  auto now = Clock::now();
  auto sample = sample_of(make_snapshot({}, {}), now + 5s);
  auto answer = parse_answer(ps_answer(request_line({}), &sample, now));
  ASSERT_TRUE(answer.ok());
  EXPECT_EQ(answer->snapshot_age_ms, 0);
}

}  // namespace
}  // namespace gpureap::daemon

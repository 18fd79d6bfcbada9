// The page of one `run` job: the job's memory and the rest of the GPU over its life, and the
// moments the command exited, teardown ended and the memory came back.
#include <gtest/gtest.h>

#include <csignal>

#include "byte_units.h"
#include "report/html_page.h"
#include "report/run_page.h"

namespace gpureap::report {
namespace {

using namespace std::chrono;
using testing::kGiB;
const auto kStart = system_clock::time_point(seconds(1'700'000'000));

supervise::RunReport job() {
  supervise::RunReport r;
  r.command = {"python", "train.py", "--name=<b>"};
  r.started_at = kStart;
  r.runtime = seconds(3);
  r.teardown = milliseconds(500);
  r.ended_at = kStart + seconds(5);
  r.exit.cause = supervise::EndCause::Exited;
  r.exit.code = 0;
  r.exit.status = 0;
  r.gpu.available = true;
  r.gpu.interval = seconds(1);
  r.gpu.peaks = {{0, "Fake H200", "GPU-1", 4 * kGiB, seconds(1), 1}};
  const uint64_t job_bytes[] = {0, 4 * kGiB, 4 * kGiB, 4 * kGiB, 0};
  for (int s = 0; s < 5; ++s)
    r.gpu.timeline.push_back(
        {kStart + seconds(s), 0, job_bytes[s], job_bytes[s] + kGiB, 80 * kGiB});
  r.release.performed = true;
  r.release.released = true;
  r.release.method = "driver";
  r.release.took = milliseconds(200);
  return r;
}

TEST(ReportRunPage, TheJobAndTheRestOfTheGpuOverItsLife) {
  auto page = build_run_page(job(), kStart + seconds(10));
  ASSERT_EQ(page.gpus.size(), 1u);
  const auto& c = page.gpus[0];
  EXPECT_EQ(c.title, "GPU 0 · Fake H200 · GPU-1");
  ASSERT_EQ(c.bands.size(), 2u);
  EXPECT_EQ(c.bands[0].id, "job");
  EXPECT_EQ(c.bands[0].bytes, (std::vector<uint64_t>{0, 4 * kGiB, 4 * kGiB, 4 * kGiB, 0}));
  EXPECT_EQ(c.bands[1].bytes, (std::vector<uint64_t>(5, kGiB)));
  EXPECT_EQ(c.total_bytes, 80 * kGiB);
  ASSERT_EQ(c.markers.size(), 3u);
  EXPECT_EQ(c.markers[0].kind, MarkerKind::JobEnd);
  EXPECT_EQ(c.markers[0].at, kStart + seconds(3));
  EXPECT_EQ(c.markers[1].kind, MarkerKind::Teardown);
  EXPECT_EQ(c.markers[1].at, kStart + milliseconds(3500));
  EXPECT_EQ(c.markers[2].kind, MarkerKind::Release);
  EXPECT_EQ(c.markers[2].at, kStart + milliseconds(3700));
  EXPECT_FALSE(page.has_ghost_table);
  const std::string html = render_html(page);
  EXPECT_EQ(html.find("Ghosts in this window"), std::string::npos);
  EXPECT_EQ(html.find("<b>"), std::string::npos);
  EXPECT_NE(html.find("--name=&lt;b&gt;"), std::string::npos);
  EXPECT_NE(html.find("data-series=\"job\""), std::string::npos);
}

TEST(ReportRunPage, TheStackNeverDrawsMoreThanTheDriverSaysIsUsed) {
  auto r = job();
  r.gpu.timeline[2].used_bytes = 3 * kGiB;  // the job's listed 4 GiB, on a GPU using 3
  auto page = build_run_page(r, kStart + seconds(10));
  const auto& c = page.gpus[0];
  EXPECT_EQ(c.bands[0].bytes[2], 3 * kGiB);
  EXPECT_EQ(c.bands[1].bytes[2], 0u);
  for (size_t i = 0; i < c.times.size(); ++i)
    EXPECT_EQ(c.bands[0].bytes[i] + c.bands[1].bytes[i], *r.gpu.timeline[i].used_bytes) << i;
}

TEST(ReportRunPage, MemoryNeverReleasedHasNoReleaseMarker) {
  auto r = job();
  r.release.released = false;
  r.release.took.reset();
  auto page = build_run_page(r, kStart + seconds(10));
  ASSERT_EQ(page.gpus[0].markers.size(), 2u);
  EXPECT_EQ(page.gpus[0].markers[1].kind, MarkerKind::Teardown);
}

TEST(ReportRunPage, AJobWithoutGpuSamplesSaysSo) {
  auto r = job();
  r.gpu.timeline.clear();
  r.gpu.available = false;
  auto page = build_run_page(r, kStart + seconds(10));
  EXPECT_TRUE(page.gpus.empty());
  EXPECT_NE(page.notes.back().find("No GPU driver answered"), std::string::npos);
}

TEST(ReportRunPage, TheJobsLanesShowItsCommandAndWhatTheTeardownEnded) {
  auto r = job();
  r.pid = 4242;
  r.leftovers = {{4250, "loader<1>", {}, {"/dev/nvidia0"}, {SIGTERM, SIGCONT}, true}};
  auto page = build_run_page(r, kStart + seconds(10));
  const auto& t = page.gpus[0].timeline;
  ASSERT_EQ(t.lanes.size(), 2u);
  EXPECT_EQ(t.lanes[0].pid, 4242);
  EXPECT_EQ(t.lanes[0].spans.front().from, kStart);
  EXPECT_EQ(t.lanes[1].pid, 4250);
  ASSERT_FALSE(t.lanes[1].marks.empty());
  EXPECT_EQ(t.lanes[1].marks[0].kind, history::JournalEventKind::Signal);
  EXPECT_EQ(t.lanes[1].marks[0].text.rfind(
                "SIGTERM, SIGCONT to PID 4250 by `gpureap run` (its teardown)", 0),
            0u)
      << t.lanes[1].marks[0].text;
  const std::string html = render_html(page);
  EXPECT_NE(html.find("<svg class=\"timeline\""), std::string::npos);
  EXPECT_NE(html.find("4250 loader&lt;1&gt;"), std::string::npos);
}

}  // namespace
}  // namespace gpureap::report

// The page model of the daemon's history: bands with the values the history holds at known
// samples, markers from the audit log, final closes and other sources, the ghosts' endings.
#include <gtest/gtest.h>

#include "report/history_page.h"
#include "report_fixture.h"

namespace gpureap::report {
namespace {

using namespace gpureap::testing;

Page page_of(const HistoryInput& in, size_t named = 2) {
  return build_history_page(in, {named, at_s(100)});
}

std::vector<std::string> ids(const GpuChart& c) {
  std::vector<std::string> out;
  for (const auto& b : c.bands) out.push_back(b.id);
  return out;
}

TEST(ReportHistoryPage, TheLargestProcessesAreNamedTheRestIsOther) {
  auto page = page_of(report_input());
  ASSERT_EQ(page.gpus.size(), 2u);
  const auto& c = page.gpus[0];
  EXPECT_EQ(ids(c),
            (std::vector<std::string>{"pid-100", "pid-200", "other", "ghost", "unattributed"}));
  EXPECT_EQ(c.bands[0].label, "100 trainer (alice)");
  ASSERT_EQ(c.times.size(), 10u);
  EXPECT_EQ(c.bands[0].bytes[0], 10 * kGiB);
  EXPECT_EQ(c.bands[1].bytes[0], 4 * kGiB);
  EXPECT_EQ(c.bands[2].bytes[0], 1 * kGiB);  // 300, not named
  EXPECT_EQ(c.bands[3].bytes[0], 0u);
  EXPECT_EQ(c.bands[3].bytes[2], 9 * kGiB);  // 7777 and 4242
  EXPECT_EQ(c.bands[3].bytes[3], 8 * kGiB);
  EXPECT_EQ(c.bands[3].bytes[7], 2 * kGiB);
  EXPECT_EQ(c.bands[4].bytes[5], 1 * kGiB);
  EXPECT_EQ(c.total_bytes, 80 * kGiB);
  // The stack's top is the driver's used memory at every sample.
  const auto in = report_input();
  const auto& g = in.history.gpus[0];
  for (size_t i = 0; i < c.times.size(); ++i) {
    uint64_t sum = 0;
    for (const auto& b : c.bands) sum += b.bytes[i];
    EXPECT_EQ(sum, *g.points[i].used_bytes) << "sample " << i;
  }
  // More names asked for: 300 gets its own band, "other" holds nothing.
  auto wide = page_of(report_input(), 5);
  EXPECT_EQ(ids(wide.gpus[0]), (std::vector<std::string>{"pid-100", "pid-200", "pid-300", "other",
                                                         "ghost", "unattributed"}));
  EXPECT_EQ(wide.gpus[0].bands[3].bytes[0], 0u);
}

TEST(ReportHistoryPage, TheStackNeverDrawsMoreThanTheDriverSaysIsUsed) {
  // At t3 the driver lists 15 GiB for live processes and 8 GiB for gone 4242, but says 20 GiB
  // are used (a driver that counts a shared buffer in two processes' lists): the chart draws
  // 20 GiB, the ghost's 8 and what is left of the named processes' 15, largest first.
  auto in = report_input();
  auto& point = in.history.gpus[0].points[3];
  point.used_bytes = 20 * kGiB;
  point.unattributed_bytes = 0;
  const auto page = page_of(in);
  const auto& c = page.gpus[0];
  for (size_t i = 0; i < c.times.size(); ++i) {
    uint64_t sum = 0;
    for (const auto& b : c.bands) sum += b.bytes[i];
    EXPECT_EQ(sum, *in.history.gpus[0].points[i].used_bytes) << "sample " << i;
  }
  EXPECT_EQ(c.bands[0].bytes[3], 10 * kGiB);  // 100
  EXPECT_EQ(c.bands[1].bytes[3], 2 * kGiB);   // 200, cut to what is left
  EXPECT_EQ(c.bands[2].bytes[3], 0u);         // other
  EXPECT_EQ(c.bands[3].bytes[3], 8 * kGiB);   // ghost
}

TEST(ReportHistoryPage, MarkersComeFromTheAuditLogClosesAndOtherSources) {
  auto page = page_of(report_input());
  const auto& m0 = page.gpus[0].markers;
  ASSERT_EQ(m0.size(), 3u);
  EXPECT_EQ(m0[0].kind, MarkerKind::Release);
  EXPECT_EQ(m0[0].at, at_s(2.3));
  EXPECT_NE(m0[0].text.find("/dev/nvidia0"), std::string::npos);
  EXPECT_EQ(m0[1].kind, MarkerKind::Kill);
  EXPECT_NE(m0[1].text.find("reap-ghosts"), std::string::npos);
  EXPECT_NE(m0[1].text.find("8.0 GiB released"), std::string::npos) << m0[1].text;
  EXPECT_EQ(m0[2].kind, MarkerKind::GpuError);
  // The kill named GPU 0, the close's holder was seen on GPU 0 only; the Xid event names no GPU.
  const auto& m1 = page.gpus[1].markers;
  ASSERT_EQ(m1.size(), 1u);
  EXPECT_EQ(m1[0].kind, MarkerKind::GpuError);
  // A close by a process the history never saw is on every chart.
  auto in = report_input();
  in.releases.push_back({"/dev/nvidia1", 9999, at_s(8)});
  auto wide = page_of(in);
  EXPECT_EQ(wide.gpus[0].markers.size(), 4u);
  ASSERT_EQ(wide.gpus[1].markers.size(), 2u);
  EXPECT_EQ(wide.gpus[1].markers[1].kind, MarkerKind::Release);
}

TEST(ReportHistoryPage, AFileReleaseIsDrawnOnTheGpusItsFileReachesNotWhereItsHolderIsListed) {
  // Trainer 100 is listed on GPU 0 and, as CUDA does, held GPU 1's file too; it closed that one.
  auto in = report_input();
  in.releases.push_back({"/dev/nvidia1", 100, at_s(4.1), std::vector<unsigned>{1}});
  // The driver's control file reaches no one GPU: on no chart.
  in.releases.push_back({"/dev/nvidiactl", 100, at_s(4.2), std::vector<unsigned>{}});
  auto page = page_of(in);
  auto texts = [&](unsigned gpu) {
    std::string all;
    for (const auto& m : page.gpus[gpu].markers)
      if (m.kind == MarkerKind::Release) all += m.text + "\n";
    return all;
  };
  EXPECT_EQ(texts(0).find("nvidia1"), std::string::npos) << texts(0);
  EXPECT_NE(texts(1).find("final close of /dev/nvidia1 (last holder PID 100)"), std::string::npos)
      << texts(1);
  EXPECT_EQ((texts(0) + texts(1)).find("nvidiactl"), std::string::npos);
  // The release of /dev/nvidia0 named no GPU (an older daemon): where its holder was seen.
  EXPECT_NE(texts(0).find("/dev/nvidia0"), std::string::npos) << texts(0);
}

TEST(ReportHistoryPage, GhostsEndInTheirThreeWays) {
  auto page = page_of(report_input());
  ASSERT_EQ(page.ghosts.size(), 3u);
  const auto& early = page.ghosts[0];
  EXPECT_EQ(early.pid, 7777);
  EXPECT_EQ(early.ending, GhostEnding::ReleasedOnItsOwn);
  EXPECT_NE(early.ending_detail.find("final close by PID 7778"), std::string::npos)
      << early.ending_detail;
  const auto& killed = page.ghosts[1];
  EXPECT_EQ(killed.pid, 4242);
  EXPECT_EQ(killed.ending, GhostEnding::KilledByPolicy);
  EXPECT_NE(killed.ending_detail.find("reap-ghosts"), std::string::npos);
  EXPECT_EQ(killed.keepers, (std::vector<std::string>{"4250 python"}));
  EXPECT_EQ(killed.peak_bytes, 8 * kGiB);
  EXPECT_EQ(killed.last_seen - killed.first_seen, std::chrono::seconds(3));
  EXPECT_EQ(page.ghosts[2].pid, 5151);
  EXPECT_EQ(page.ghosts[2].ending, GhostEnding::StillHeld);
}

// A kill by a policy of a process that kept nothing is not the ghost's ending.
TEST(ReportHistoryPage, AKillOfAnotherProcessDoesNotEndAGhost) {
  auto in = report_input();
  in.audit[0].process.pid = 100;
  auto page = page_of(in);
  ASSERT_EQ(page.ghosts.size(), 3u);
  EXPECT_EQ(page.ghosts[1].ending, GhostEnding::ReleasedOnItsOwn);
}

TEST(ReportHistoryPage, TheWindowStartsAtSince) {
  auto in = report_input();
  in.since = at_s(4);
  auto page = page_of(in);
  ASSERT_EQ(page.gpus[0].times.size(), 6u);
  EXPECT_EQ(page.gpus[0].times[0], at_s(4));
  ASSERT_EQ(page.ghosts.size(), 2u);  // 7777 ended before the window
  EXPECT_EQ(page.ghosts[0].pid, 4242);
  EXPECT_EQ(page.ghosts[0].first_seen, at_s(4));
  EXPECT_EQ(page.gpus[0].markers.size(), 2u);  // the close at t2.3 is outside
}

// Asked for 6 h of a daemon that keeps 1 h: the page starts at the oldest sample, and says so.
TEST(ReportHistoryPage, ThePageStartsWhereTheHistoryDoes) {
  auto in = report_input();
  in.since = at_s(-6 * 3600);
  auto page = page_of(in);
  EXPECT_EQ(page.from, kReportT0);
  ASSERT_EQ(page.notes.size(), 1u);
  EXPECT_NE(page.notes[0].find("history begins at 2023-11-14 22:13:20"), std::string::npos)
      << page.notes[0];
  EXPECT_EQ(page.ghosts.size(), 3u);
}

TEST(ReportHistoryPage, AnEmptyHistorySaysSo) {
  HistoryInput in;
  in.since = kReportT0;
  auto page = page_of(in);
  EXPECT_TRUE(page.gpus.empty());
  ASSERT_EQ(page.notes.size(), 1u);
  EXPECT_NE(page.notes[0].find("no GPU"), std::string::npos);
}

}  // namespace
}  // namespace gpureap::report

// Reading /api/v1/history back: what the daemon writes is what the report reads, and a
// document that is not one is an error that says why, never a crash.
#include <gtest/gtest.h>

#include "history/history_document.h"
#include "report/history_page.h"
#include "report_fixture.h"

namespace gpureap::report {
namespace {

using namespace gpureap::testing;
using nlohmann::json;

json document() {
  auto in = report_input();
  return history::history_to_json({in.hostname,
                                   in.since,
                                   in.history,
                                   {{"/dev/nvidia0", 7778, at_s(2.3), std::vector<unsigned>{0}}}});
}

TEST(ReportHistoryDocument, WhatTheDaemonWritesIsWhatTheReportReads) {
  auto in = parse_history_document(document().dump());
  ASSERT_TRUE(in) << in.error().message;
  const auto want = report_input();
  EXPECT_EQ(in->hostname, "node<7>");
  EXPECT_EQ(in->since, kReportT0);
  EXPECT_EQ(in->history.interval, std::chrono::seconds(1));
  ASSERT_EQ(in->history.gpus.size(), 2u);
  EXPECT_EQ(in->history.gpus[0].total_bytes, 80 * kGiB);
  ASSERT_EQ(in->history.gpus[0].points.size(), 10u);
  for (size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(in->history.gpus[0].points[i].time, want.history.gpus[0].points[i].time);
    EXPECT_EQ(in->history.gpus[0].points[i].used_bytes, want.history.gpus[0].points[i].used_bytes);
    EXPECT_EQ(in->history.gpus[0].points[i].ghost_bytes,
              want.history.gpus[0].points[i].ghost_bytes);
  }
  ASSERT_EQ(in->history.processes.size(), want.history.processes.size());
  const auto& ghost = in->history.processes[4];
  EXPECT_EQ(ghost.key.pid, 4242);
  EXPECT_EQ(ghost.keepers, (std::vector<history::Keeper>{{4250, "python"}}));
  EXPECT_EQ(in->history.processes[1].comm, kHostileName);
  ASSERT_EQ(in->releases.size(), 1u);
  EXPECT_EQ(in->releases[0].pid, 7778);
  EXPECT_EQ(in->releases[0].at, at_s(2.3));
  EXPECT_EQ(in->releases[0].gpus, std::vector<unsigned>{0});
}

TEST(ReportHistoryDocument, OlderDocumentsWithoutKeepersOrCapacityAreRead) {
  auto doc = document();
  for (auto& p : doc["processes"]) p.erase("keepers");
  for (auto& g : doc["gpus"]) g.erase("memory_total_bytes");
  doc.erase("releases");
  auto in = parse_history_document(doc.dump());
  ASSERT_TRUE(in) << in.error().message;
  EXPECT_FALSE(in->history.gpus[0].total_bytes);
  EXPECT_TRUE(in->history.processes[4].keepers.empty());
  EXPECT_TRUE(in->releases.empty());
  // A release from a daemon that named no GPUs: not known, which is not "none".
  doc["releases"] = document()["releases"];
  doc["releases"][0].erase("gpus");
  auto old = parse_history_document(doc.dump());
  ASSERT_TRUE(old) << old.error().message;
  EXPECT_FALSE(old->releases[0].gpus.has_value());
}

TEST(ReportHistoryDocument, WhatIsNotAHistoryIsAnError) {
  auto error_of = [](const std::string& text) {
    auto r = parse_history_document(text);
    return r ? std::string("(parsed)") : r.error().message;
  };
  EXPECT_NE(error_of("not json").find("not JSON"), std::string::npos);
  EXPECT_NE(error_of("[]").find("schema"), std::string::npos);
  EXPECT_NE(error_of(R"({"schema":"gpureap.releases/v1"})").find("gpureap.releases/v1"),
            std::string::npos);
  auto doc = document();
  doc["gpus"][0]["samples"][3]["time"] = "yesterday";
  EXPECT_NE(error_of(doc.dump()).find("gpus[0].samples[3].time"), std::string::npos)
      << error_of(doc.dump());
  doc = document();
  doc["processes"][2]["pid"] = -5;
  EXPECT_NE(error_of(doc.dump()).find("processes[2].pid"), std::string::npos);
  doc = document();
  doc["gpus"][1]["samples"][0]["memory_used_bytes"] = "lots";
  EXPECT_NE(error_of(doc.dump()).find("memory_used_bytes"), std::string::npos);
  doc = document();
  doc["processes"] = 7;
  EXPECT_NE(error_of(doc.dump()).find("not a list"), std::string::npos);
}

}  // namespace
}  // namespace gpureap::report

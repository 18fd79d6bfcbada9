#include <gtest/gtest.h>

#include "export/history_json.h"

namespace gpureap::exporter {
namespace {

using namespace std::chrono;
using history::HistoryView;
using history::ProcessTrack;
using history::TimePoint;

const TimePoint kNow = TimePoint(seconds(1'700'000'000));

TEST(ExportHistoryJson, SinceAsDurationAgoUnixTimeOrRfc3339) {
  EXPECT_EQ(*parse_since("10m", kNow), kNow - minutes(10));
  EXPECT_EQ(*parse_since("90s", kNow), kNow - seconds(90));
  EXPECT_EQ(*parse_since("1h", kNow), kNow - hours(1));
  EXPECT_EQ(*parse_since("1699999000", kNow), TimePoint(seconds(1'699'999'000)));
  EXPECT_EQ(*parse_since("1699999000.25", kNow), TimePoint(milliseconds(1'699'999'000'250)));
  EXPECT_EQ(*parse_since("2023-11-14T22:13:20Z", kNow), kNow);
  EXPECT_EQ(*parse_since("2023-11-14T22:13:20.5Z", kNow), kNow + milliseconds(500));
  EXPECT_EQ(*parse_since("2023-11-14T22:13:20+00:00", kNow), kNow);
  EXPECT_EQ(*parse_since("2023-11-15T00:13:20+02:00", kNow), kNow);
}

TEST(ExportHistoryJson, BadSinceSaysHowToWriteIt) {
  for (const char* bad :
       {"", "yesterday", "-5", "10x", "2023-11-14T22:13:20+0200", "2023-11-14T22:13", "1e999",
        // Later than a TimePoint holds (2262): refused, not overflowed.
        "1700000070000000000", "1e12", "9999-12-31T23:59:59Z"}) {
    auto r = parse_since(bad, kNow);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_NE(r.error().hint.find("RFC 3339"), std::string::npos) << bad;
    }
  }
}

TEST(ExportHistoryJson, DocumentShapeWithNullForUnknown) {
  HistoryView v;
  v.window = hours(1);
  v.interval = seconds(1);
  v.gpus.push_back({0, "GPU-0", 80ull << 30, {{kNow, 5ull << 30, std::nullopt, 0, 87, 2}}});
  ProcessTrack t;
  t.key = {4242, 1234};
  t.gpu = 0;
  t.comm = "python\xff";
  t.user = "alice";
  t.first_seen = kNow - seconds(10);
  t.last_seen = kNow;
  t.points = {{kNow - seconds(10), 1ull << 30, std::nullopt}, {kNow - seconds(2), 2ull << 30, 50}};
  v.processes.push_back(t);
  auto doc = history_to_json(v, "node1", kNow - minutes(10));
  EXPECT_EQ(doc["schema"], "gpureap.history/v1");
  EXPECT_EQ(doc["hostname"], "node1");
  EXPECT_EQ(doc["window_seconds"], 3600.0);
  EXPECT_EQ(doc["interval_seconds"], 1.0);
  EXPECT_EQ(doc["since"], 1'700'000'000.0 - 600);
  const auto& g = doc["gpus"][0];
  EXPECT_EQ(g["gpu"], 0);
  EXPECT_EQ(g["uuid"], "GPU-0");
  EXPECT_EQ(g["memory_total_bytes"], 80ull << 30);
  EXPECT_EQ(g["samples"][0]["time"], 1'700'000'000.0);
  EXPECT_EQ(g["samples"][0]["memory_used_bytes"], 5ull << 30);
  EXPECT_TRUE(g["samples"][0]["memory_unattributed_bytes"].is_null());
  EXPECT_EQ(g["samples"][0]["utilization_ratio"], 0.87);
  EXPECT_EQ(g["samples"][0]["processes"], 2);
  const auto& p = doc["processes"][0];
  EXPECT_EQ(p["pid"], 4242);
  EXPECT_EQ(p["start_ticks"], 1234);
  EXPECT_EQ(p["comm"], "python\xEF\xBF\xBD");
  EXPECT_EQ(p["changes"].size(), 2u);
  EXPECT_TRUE(p["keepers"].is_array() && p["keepers"].empty());  // a live process keeps nothing
  EXPECT_TRUE(p["changes"][0]["sm_utilization_ratio"].is_null());
  EXPECT_EQ(p["changes"][1]["sm_utilization_ratio"], 0.5);
  EXPECT_EQ(p["changes"][1]["memory_bytes"], 2ull << 30);
}

}  // namespace
}  // namespace gpureap::exporter

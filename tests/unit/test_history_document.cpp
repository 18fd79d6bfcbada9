// The gpureap.history/v1 document: what the daemon writes is what `gpureap report` reads back,
// field for field. The round trip sets every field of every struct, so a field the writer drops
// or the reader skips makes the structures differ; changing any member of the written document
// must change what is read (or be refused), so a member written but never read is seen too.
#include <gtest/gtest.h>

#include "document_round_trip.h"
#include "history/history_document.h"

namespace gpureap::history {
namespace {

using namespace std::chrono;
using nlohmann::json;

const TimePoint kNow = TimePoint(seconds(1'700'000'000));

// Every field set, none to its default (the round trip checks that).
HistoryDocument every_field_set() {
  HistoryDocument d;
  d.hostname = "node-7";
  d.since = kNow - minutes(10);
  d.view.window = hours(1);
  d.view.interval = milliseconds(1500);
  d.view.gpus.push_back({3,
                         "GPU-3",
                         80ull << 30,
                         {{kNow - milliseconds(1250), 5ull << 30, 1ull << 30, 2ull << 30, 87, 4},
                          {kNow, 6ull << 30, 7, 8, 100, 1}}});
  ProcessTrack t;
  t.key = {4194303, 987654321};
  t.gpu = 3;
  t.comm = "python";
  t.user = "alice";
  t.container = "ctr-1";
  t.first_seen = kNow - seconds(10);
  t.last_seen = kNow - milliseconds(1);
  t.points = {{kNow - seconds(10), 1ull << 30, 13}, {kNow - seconds(2), 2ull << 30, 50}};
  t.keepers = {{4250, "worker"}};
  d.view.processes.push_back(t);
  d.releases = {{"/dev/nvidia3", 7778, kNow - milliseconds(2300), std::vector<unsigned>{3}},
                {"/dev/nvidiactl", 7779, kNow, std::vector<unsigned>{}}};
  return d;
}

TEST(HistoryDocument, EveryFieldSurvivesTheRoundTrip) {
  const auto d = every_field_set();
  auto back = history_from_json(json::parse(history_to_json(d).dump()));
  ASSERT_TRUE(back) << back.error().message;
  testing::expect_round_trip(d, *back);
}

TEST(HistoryDocument, EveryMemberWrittenIsRead) {
  const auto d = every_field_set();
  testing::expect_every_member_read(history_to_json(d), history_from_json);
}

TEST(HistoryDocument, ShapeWithNullForUnknown) {
  HistoryDocument d;
  d.hostname = "node1";
  d.since = kNow - minutes(10);
  d.view.window = hours(1);
  d.view.interval = seconds(1);
  d.view.gpus.push_back({0, "GPU-0", 80ull << 30, {{kNow, 5ull << 30, std::nullopt, 0, 87, 2}}});
  ProcessTrack t;
  t.key = {4242, 1234};
  t.comm = "python\xff";
  t.first_seen = kNow - seconds(10);
  t.last_seen = kNow;
  t.points = {{kNow - seconds(10), 1ull << 30, std::nullopt}, {kNow - seconds(2), 2ull << 30, 50}};
  d.view.processes.push_back(t);
  auto doc = history_to_json(d);
  EXPECT_EQ(doc["schema"], "gpureap.history/v1");
  EXPECT_EQ(doc["window_seconds"], 3600.0);
  EXPECT_EQ(doc["since"], 1'700'000'000.0 - 600);
  const auto& g = doc["gpus"][0];
  EXPECT_EQ(g["samples"][0]["time"], 1'700'000'000.0);
  EXPECT_TRUE(g["samples"][0]["memory_unattributed_bytes"].is_null());
  EXPECT_EQ(g["samples"][0]["utilization_ratio"], 0.87);
  const auto& p = doc["processes"][0];
  EXPECT_EQ(p["comm"], "python\xEF\xBF\xBD");  // valid UTF-8 whatever the process calls itself
  EXPECT_TRUE(p["keepers"].is_array() && p["keepers"].empty());  // a live process keeps nothing
  EXPECT_TRUE(p["changes"][0]["sm_utilization_ratio"].is_null());
  EXPECT_EQ(p["changes"][1]["sm_utilization_ratio"], 0.5);
  EXPECT_TRUE(doc["releases"].is_array() && doc["releases"].empty());
}

TEST(HistoryDocument, OlderDocumentsLackingLaterMembersAreRead) {
  json doc = history_to_json(every_field_set());
  doc.erase("releases");
  doc["gpus"][0].erase("memory_total_bytes");
  doc["processes"][0].erase("keepers");
  auto back = history_from_json(doc);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_TRUE(back->releases.empty());
  EXPECT_FALSE(back->view.gpus[0].total_bytes);
  EXPECT_TRUE(back->view.processes[0].keepers.empty());
}

TEST(HistoryDocument, WhatIsWrongIsNamedWhereItIs) {
  auto error_of = [](const json& doc) {
    auto r = history_from_json(doc);
    return r ? std::string("(read)") : r.error().message;
  };
  const json good = history_to_json(every_field_set());
  EXPECT_NE(error_of(json::array()).find("schema"), std::string::npos);
  EXPECT_NE(
      error_of(json::parse(R"({"schema":"gpureap.releases/v1"})")).find("gpureap.releases/v1"),
      std::string::npos);
  auto bad = [&](const char* pointer, json value, const char* named) {
    json doc = good;
    doc[json::json_pointer(pointer)] = std::move(value);
    EXPECT_NE(error_of(doc).find(named), std::string::npos) << pointer << ": " << error_of(doc);
  };
  bad("/gpus/0/samples/1/time", "yesterday", "gpus[0].samples[1].time");
  bad("/gpus/0/samples/0/processes", -1, "gpus[0].samples[0].processes");
  bad("/gpus/0/samples/0/utilization_ratio", "high", "utilization_ratio is not a ratio");
  bad("/processes/0/pid", -5, "processes[0].pid");
  bad("/processes/0/keepers/0/pid", "x", "processes[0].keepers[0].pid");
  bad("/processes/0/keepers", 7, "processes[0].keepers is not a list");
  bad("/processes", 7, "processes is not a list");
  bad("/releases/1/at", "noon", "releases[1].at");
  bad("/releases/0/gpus/0", 1ll << 40, "releases[0].gpus[0]");
  bad("/hostname", 3, "hostname is not a string");
  bad("/interval_seconds", -1, "interval_seconds");
  // Text from the document is escaped before it reaches a terminal.
  EXPECT_EQ(error_of(json::parse(R"({"schema":"\u001b[2J"})")).find('\x1b'), std::string::npos);
}

TEST(HistoryDocument, AReleasesListAloneReadsBack) {
  const auto d = every_field_set();
  auto back = releases_from_json(releases_to_json(d.releases));
  ASSERT_TRUE(back) << back.error().message;
  testing::expect_round_trip(d.releases, *back);
  json bad = releases_to_json(d.releases);
  bad[0].erase("pid");
  EXPECT_FALSE(releases_from_json(bad));
}

}  // namespace
}  // namespace gpureap::history

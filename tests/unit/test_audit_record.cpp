#include <gtest/gtest.h>

#include <functional>

#include "audit/record.h"
#include "audit_test_support.h"
#include "document_round_trip.h"
#include "text/rfc3339.h"

namespace gpureap::audit {
namespace {

using nlohmann::json;
using test::at_ms;

Record full_record() {
  Record r;
  r.time = at_ms(1'780'000'000'123);
  r.host = "gpu-node-7";
  r.event = "action";
  r.policy = "ghost-keepers";
  r.action = "kill";
  r.enforced = true;
  r.outcome = "released";
  r.process.pid = 4242;
  r.process.start_ticks = 987654;
  r.process.start_time = at_ms(1'779'990'000'000);
  r.process.uid = 1000;
  r.process.user = "alice";
  r.process.comm = "pt_data_worker";
  r.process.cmdline = {"python", "train.py", "--lr", "3e-4"};
  r.process.container = "3f2a9c";
  r.memory = {{0, 8ull << 30}, {1, std::nullopt}, {2, 1ull << 30}};
  r.released_bytes = 9ull << 30;
  r.released_at = at_ms(1'780'000'000'050);
  r.reasons = {"inherited-holder", "orphan"};
  r.attempt = 2;
  r.detail = "SIGKILL after 10s";
  r.signalled = {{4250, 987700, "pt_data_worker", 1000, "alice", {"SIGTERM", "SIGKILL"}},
                 {4251, 987701, "pt_pin_memory", 1001, std::nullopt, {"SIGTERM"}}};
  return r;
}

TEST(AuditRecord, FieldNamesAreThePublicFormat) {
  json j = to_json(full_record());
  EXPECT_EQ(j["time"], "2026-05-28T20:26:40.123Z");
  EXPECT_EQ(j["host"], "gpu-node-7");
  EXPECT_EQ(j["event"], "action");
  EXPECT_EQ(j["policy"], "ghost-keepers");
  EXPECT_EQ(j["action"], "kill");
  EXPECT_EQ(j["enforced"], true);
  EXPECT_EQ(j["outcome"], "released");
  EXPECT_EQ(j["process"]["pid"], 4242);
  EXPECT_EQ(j["process"]["start_ticks"], 987654);
  EXPECT_EQ(j["process"]["start_time"], "2026-05-28T17:40:00.000Z");
  EXPECT_EQ(j["process"]["uid"], 1000);
  EXPECT_EQ(j["process"]["user"], "alice");
  EXPECT_EQ(j["process"]["comm"], "pt_data_worker");
  EXPECT_EQ(j["process"]["cmdline"], json({"python", "train.py", "--lr", "3e-4"}));
  EXPECT_EQ(j["process"]["container"], "3f2a9c");
  EXPECT_EQ(j["memory"], json::parse(R"([{"gpu":0,"bytes":8589934592},{"gpu":1,"bytes":null},
                                          {"gpu":2,"bytes":1073741824}])"));
  EXPECT_EQ(j["memory_bytes"], 9ull << 30) << "the sum of what is known";
  EXPECT_EQ(j["released_bytes"], 9ull << 30);
  EXPECT_EQ(j["released_at"], "2026-05-28T20:26:40.050Z");
  EXPECT_EQ(j["reasons"], json({"inherited-holder", "orphan"}));
  EXPECT_EQ(j["attempt"], 2);
  EXPECT_EQ(j["detail"], "SIGKILL after 10s");
  EXPECT_EQ(j["signalled"], json::parse(R"([
      {"pid":4250,"start_ticks":987700,"comm":"pt_data_worker","uid":1000,"user":"alice",
       "signals":["SIGTERM","SIGKILL"]},
      {"pid":4251,"start_ticks":987701,"comm":"pt_pin_memory","uid":1001,"user":null,
       "signals":["SIGTERM"]}])"));
  EXPECT_EQ(j["actor"], nullptr) << "a policy's record: no command asked";
  EXPECT_EQ(j.size(), 17u) << j.dump();
  EXPECT_EQ(j["process"].size(), 8u) << j.dump();
}

// Like every field, `signalled` is always written: a record that signalled nothing says so with
// an empty list, in its place after `detail`.
TEST(AuditRecord, ARecordThatSignalledNothingWritesAnEmptyList) {
  Record r = full_record();
  r.signalled.clear();
  const std::string line = to_json_line(r);
  EXPECT_NE(line.find(R"("detail":"SIGKILL after 10s","signalled":[],"actor":null})"),
            std::string::npos)
      << line;
  auto back = record_from_json(json::parse(line));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_TRUE(back->signalled.empty());
}

// A process's name and user are its own bytes: the line keeps them valid UTF-8 and on one line.
TEST(AuditRecord, ASignalledProcessNameIsUntrustedText) {
  Record r = full_record();
  r.signalled = {{4250, 987700, "evil\n\xff", 1000, "bad\x1b[2J", {"SIGKILL"}}};
  std::string line;
  ASSERT_NO_THROW(line = to_json_line(r));
  EXPECT_EQ(line.find('\n'), line.size() - 1) << line;
  json j = json::parse(line);
  EXPECT_EQ(j["signalled"][0]["comm"], "evil\n\xef\xbf\xbd");
  EXPECT_EQ(j["signalled"][0]["user"], "bad\x1b[2J");
}

TEST(AuditRecord, AnAnnouncedActionNamesWhoAskedAndReadsBack) {
  Record r;
  r.time = std::chrono::system_clock::time_point(std::chrono::seconds(1'780'000'000));
  r.event = "announced";
  r.action = "SIGTERM";
  r.outcome = "announced";
  r.process.pid = 4250;
  r.actor = Actor{0, "root", "gpureap kill 4242"};
  json j = to_json(r);
  EXPECT_EQ(j["actor"], json({{"uid", 0}, {"user", "root"}, {"command", "gpureap kill 4242"}}));
  auto back = record_from_json(json::parse(to_json_line(r)));
  ASSERT_TRUE(back.ok());
  ASSERT_TRUE(back->actor);
  EXPECT_EQ(back->actor->user, "root");
  EXPECT_EQ(back->actor->command, "gpureap kill 4242");
}

TEST(AuditRecord, UnknownValuesAreNullNeverZero) {
  Record r = full_record();
  r.process = {};
  r.process.pid = 77;
  r.memory = {{0, std::nullopt}};
  r.released_bytes.reset();
  r.released_at.reset();
  json j = to_json(r);
  for (const char* key : {"start_ticks", "start_time", "uid", "user", "container"})
    EXPECT_TRUE(j["process"][key].is_null()) << key << ": " << j.dump();
  EXPECT_TRUE(j["memory_bytes"].is_null());
  EXPECT_TRUE(j["released_bytes"].is_null());
  EXPECT_TRUE(j["released_at"].is_null());
  EXPECT_EQ(j["process"]["cmdline"], json::array());
}

// Every field of every struct set (an announced action's actor too), written as the log's line
// and read back: a field either side drops is named.
TEST(AuditRecord, EveryFieldSurvivesTheRoundTrip) {
  Record r = full_record();
  r.actor = Actor{1000, "alice", "gpureap kill 4242"};
  auto back = record_from_json(json::parse(to_json_line(r)));
  ASSERT_TRUE(back) << back.error().message;
  gpureap::testing::expect_round_trip(r, *back);
  // memory_bytes is the sum of `memory`, for readers that want one figure.
  gpureap::testing::expect_every_member_read(to_json(r), record_from_json, {"/memory_bytes"});
}

TEST(AuditRecord, TheLineIsOneLineWithTimeFirst) {
  Record r = full_record();
  r.process.cmdline = {"evil\nname", "\x1b[2J"};
  r.detail = "line one\nline two";
  std::string line = to_json_line(r);
  ASSERT_FALSE(line.empty());
  EXPECT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1) << line;
  EXPECT_EQ(line.rfind("{\"time\":\"2026-05-28T20:26:40.123Z\",\"host\":", 0), 0u) << line;
}

TEST(AuditRecord, InvalidUtf8IsReplacedNotThrown) {
  Record r = full_record();
  r.process.comm = "bad\xff\xfe";
  r.process.cmdline = {"\xc3"};
  std::string line;
  ASSERT_NO_THROW(line = to_json_line(r));
  auto j = json::parse(line);
  EXPECT_EQ(j["process"]["comm"], "bad\xef\xbf\xbd\xef\xbf\xbd");
  ASSERT_NO_THROW((void)to_json(r).dump());
}

TEST(AuditRecord, UnknownFieldsAreIgnored) {
  json j = to_json(full_record());
  j["written_by"] = "gpureap 9.0";
  j["process"]["cgroup"] = "/kubepods/x";
  auto back = record_from_json(j);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->process.pid, 4242);
}

TEST(AuditRecord, OnlyTheEssentialFieldsAreRequired) {
  auto back = record_from_json(json::parse(
      R"({"time":"2026-05-28T20:26:40Z","event":"decision","policy":"p","outcome":"would-kill",
          "process":{"pid":5}})"));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->process.pid, 5);
  EXPECT_EQ(back->time, at_ms(1'780'000'000'000));
  EXPECT_FALSE(back->released_bytes);
  EXPECT_TRUE(back->memory.empty());
}

TEST(AuditRecord, MissingOrMistypedRequiredFieldsAreNamed) {
  json good = to_json(full_record());
  struct Case {
    std::function<void(json&)> spoil;
    std::string expected;
  };
  std::vector<Case> cases = {
      {[](json& j) { j.erase("time"); }, "\"time\" is missing"},
      {[](json& j) { j["time"] = 5; }, "\"time\" is not a string"},
      {[](json& j) { j["time"] = "yesterday"; }, "\"time\" is not an RFC 3339 time"},
      {[](json& j) { j.erase("event"); }, "\"event\" is missing"},
      {[](json& j) { j["policy"] = json::array(); }, "\"policy\" is not a string"},
      {[](json& j) { j["outcome"] = nullptr; }, "\"outcome\" is missing"},
      {[](json& j) { j.erase("process"); }, "\"process\" is missing"},
      {[](json& j) { j["process"] = "4242"; }, "\"process\" is not an object"},
      {[](json& j) { j["process"].erase("pid"); }, "\"process.pid\" is missing"},
      {[](json& j) { j["process"]["pid"] = "4242"; }, "\"process.pid\" is not a PID"},
      {[](json& j) { j["process"]["pid"] = -1; }, "\"process.pid\" is not a PID"},
  };
  for (const auto& c : cases) {
    json j = good;
    c.spoil(j);
    auto back = record_from_json(j);
    ASSERT_FALSE(back) << c.expected;
    EXPECT_NE(back.error().message.find(c.expected), std::string::npos)
        << back.error().message << " / expected " << c.expected;
  }
  EXPECT_FALSE(record_from_json(json::array()));
}

TEST(AuditRecord, MistypedOptionalFieldsReadAsUnknown) {
  json j = to_json(full_record());
  j["released_bytes"] = "lots";
  j["process"]["uid"] = -3;
  j["memory"] = json::parse(R"([{"gpu": 0, "bytes": "8G"}, {"gpu": "one"}, 7])");
  // An entry without a PID names nobody and is left out; a mistyped member reads as unknown.
  j["signalled"] = json::parse(R"([{"pid": 4250, "start_ticks": "x", "uid": -1,
                                    "signals": ["SIGTERM", 9]},
                                   {"pid": "4251"}, {"pid": 0}, {"comm": "x"}, "4252"])");
  auto back = record_from_json(j);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_FALSE(back->released_bytes);
  EXPECT_FALSE(back->process.uid);
  ASSERT_EQ(back->memory.size(), 1u);
  EXPECT_FALSE(back->memory[0].bytes);
  ASSERT_EQ(back->signalled.size(), 1u);
  EXPECT_EQ(back->signalled[0].pid, 4250);
  EXPECT_FALSE(back->signalled[0].start_ticks);
  EXPECT_FALSE(back->signalled[0].uid);
  EXPECT_EQ(back->signalled[0].signals, std::vector<std::string>{"SIGTERM"});
}

TEST(OutputRfc3339, ReadsWhatTheWriterWritesAndOffsets) {
  EXPECT_EQ(text::parse_rfc3339("2026-05-28T20:26:40.123Z"), at_ms(1'780'000'000'123));
  EXPECT_EQ(text::parse_rfc3339("2026-05-28T20:26:40Z"), at_ms(1'780'000'000'000));
  EXPECT_EQ(text::parse_rfc3339("2026-05-28 22:26:40.5+02:00"), at_ms(1'780'000'000'500));
  EXPECT_EQ(text::parse_rfc3339("2026-05-28T19:26:40.123456-01:00"), at_ms(1'780'000'000'123));
  EXPECT_EQ(text::parse_rfc3339("1970-01-01T00:00:00Z"), at_ms(0));
  EXPECT_EQ(text::parse_rfc3339("2024-02-29T00:00:00Z"), at_ms(1'709'164'800'000));
}

TEST(OutputRfc3339, RejectsWhatIsNotATime) {
  for (const char* bad :
       {"", "2026-05-28", "2026-05-28T20:26:40", "2026-13-01T00:00:00Z", "2026-02-29T00:00:00Z",
        "2026-05-28T24:00:00Z", "2026-05-28T20:26:40.Z", "2026-05-28T20:26:40Zjunk",
        "2026-5-28T20:26:40Z", "1h", "2026-05-28T20:26:40+0200",
        // Beyond what system_clock holds (1678 to 2262): an overflow, not a time.
        "9999-12-31T23:59:59Z", "0001-01-01T00:00:00Z", "2262-04-12T00:00:00Z"})
    EXPECT_FALSE(text::parse_rfc3339(bad)) << bad;
  EXPECT_EQ(text::parse_rfc3339("2262-04-11T00:00:00Z"), at_ms(9'223'286'400'000));
}

}  // namespace
}  // namespace gpureap::audit

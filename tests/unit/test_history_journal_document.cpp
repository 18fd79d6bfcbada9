// The incident journal's lanes and events in the history document: what the daemon writes is
// what `gpureap report` reads back, every field of every lane and event.
#include <gtest/gtest.h>

#include "document_round_trip.h"
#include "history/journal_document.h"

namespace gpureap::history {
namespace {

using namespace std::chrono;
using nlohmann::json;

const JournalTime kJournalNow = JournalTime(seconds(1'700'000'000));

JournalView every_journal_field_set() {
  JournalLane lane{4194303,
                   987654321,
                   3,
                   4250,
                   "python",
                   "alice",
                   kJournalNow - seconds(30),
                   kJournalNow - milliseconds(1),
                   true,
                   true,
                   kJournalNow - seconds(20),
                   kJournalNow - seconds(19),
                   true,
                   true,
                   false,
                   8ull << 30};
  JournalEvent signal{kJournalNow - seconds(5),
                      JournalEventKind::Signal,
                      3u,
                      4250,
                      4242,
                      1ull << 30,
                      "SIGTERM",
                      0u,
                      "root",
                      "gpureap kill 4242",
                      "its keepers"};
  JournalEvent fork{kJournalNow - seconds(29),
                    JournalEventKind::Fork,
                    std::nullopt,
                    4242,
                    4250,
                    0,
                    "",
                    std::nullopt,
                    "",
                    "",
                    ""};
  return {{lane}, {fork, signal}};
}

json journal_written(const JournalView& v) {
  json incident = json::object();
  journal_to_json(v, incident);
  return incident;
}

TEST(HistoryJournalDocument, EveryFieldSurvivesTheRoundTrip) {
  const auto v = every_journal_field_set();
  auto back = journal_from_json(json::parse(journal_written(v).dump()));
  ASSERT_TRUE(back) << back.error().message;
  gpureap::testing::expect_round_trip(v, *back);
  gpureap::testing::expect_every_member_read(journal_written(v), journal_from_json);
}

TEST(HistoryJournalDocument, AKindOfANewerDaemonIsLeftOutAndABadFieldNamed) {
  json doc = journal_written(every_journal_field_set());
  doc["events"][0]["kind"] = "quantum-event";
  auto back = journal_from_json(doc);
  ASSERT_TRUE(back) << back.error().message;
  ASSERT_EQ(back->events.size(), 1u);
  EXPECT_EQ(back->events[0].kind, JournalEventKind::Signal);
  doc["lanes"][0]["pid"] = "x";
  auto bad = journal_from_json(doc);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("incident.lanes[0].pid"), std::string::npos);
}

}  // namespace
}  // namespace gpureap::history

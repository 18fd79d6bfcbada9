// The sink types' one table (alert/sink_kind.h): every type has a row that names it, gives its
// target, sender and body, and nothing falls through to another type's body; two configs deliver
// the same way when every field but the line is equal.
#include <gtest/gtest.h>

#include <set>

#include "alert/dispatcher.h"
#include "alert/payload.h"
#include "alert/sink_kind.h"
#include "core/field_count.h"

namespace gpureap::alert {
namespace {

Notification firing_notification() {
  Alert a;
  a.labels = {{"alertname", "GpuGhostMemory"}, {"gpu", "0"}};
  a.annotations = {{"summary", "8 GiB held by ghosts"}};
  a.starts_at = std::chrono::system_clock::now();
  return {"GpuGhostMemory", {}, {a}};
}

TEST(AlertSinkKind, EveryTypeHasOneRowThatNamesItAndRoundTrips) {
  const auto& kinds = sink_kinds();
  ASSERT_EQ(kinds.size(), 4u);
  std::set<std::string_view> names;
  for (size_t i = 0; i < kinds.size(); ++i) {
    const auto& k = kinds[i];
    SCOPED_TRACE(std::string(k.name));
    EXPECT_EQ(static_cast<size_t>(k.type), i);  // in the enum's order
    EXPECT_EQ(sink_kind(k.type).name, k.name);
    EXPECT_EQ(to_string(k.type), k.name);
    EXPECT_EQ(sink_type_from_string(k.name), k.type);
    EXPECT_NE(k.make_sender, nullptr);
    EXPECT_NE(k.body, nullptr);
    EXPECT_TRUE(names.insert(k.name).second) << "two types are named " << k.name;
  }
  EXPECT_EQ(sink_type_from_string("Webhook"), std::nullopt);
  EXPECT_EQ(sink_type_names(" or "), "webhook, slack, exec or alertmanager");
  EXPECT_EQ(sink_type_names(", "), "webhook, slack, exec, alertmanager");
}

TEST(AlertSinkKind, EachTypeSendsItsOwnBody) {
  const auto n = firing_notification();
  SinkConfig sink;
  sink.name = "hook";
  const std::string url = "http://node:9400/";
  const auto webhook = to_text(webhook_payload(n, "hook", url));
  EXPECT_EQ(sink_kind(SinkType::Webhook).body(sink, n, url), webhook);
  // exec: the same Alertmanager webhook JSON, on the command's stdin.
  EXPECT_EQ(sink_kind(SinkType::Exec).body(sink, n, url), webhook);
  auto slack = sink_kind(SinkType::Slack).body(sink, n, url);
  ASSERT_TRUE(slack.has_value());
  EXPECT_EQ(*slack, to_text(*slack_payload(n)));
  auto am = sink_kind(SinkType::Alertmanager).body(sink, n, url);
  ASSERT_TRUE(am.has_value());
  EXPECT_NE(*am, webhook);
  EXPECT_EQ(am->front(), '[');  // Alertmanager's API takes a list of alerts
  for (const auto& k : sink_kinds())
    EXPECT_EQ(k.resends_firing, k.type == SinkType::Alertmanager) << k.name;
}

TEST(AlertSinkKind, TargetsAreWhatTheConfigAsksFor) {
  EXPECT_EQ(sink_kind(SinkType::Webhook).target, SinkTarget::Url);
  EXPECT_EQ(sink_kind(SinkType::Slack).target, SinkTarget::Url);
  EXPECT_EQ(sink_kind(SinkType::Exec).target, SinkTarget::Command);
  EXPECT_EQ(sink_kind(SinkType::Alertmanager).target, SinkTarget::Urls);
}

TEST(AlertSinkKind, SameDeliveryComparesEveryFieldButTheLine) {
  static_assert(core::field_count<SinkConfig>() == 9,
                "a field of SinkConfig: say here whether a change of it restarts the sink");
  SinkConfig a;
  a.name = "hook";
  a.url = "http://a/";
  a.urls = {a.url};
  SinkConfig b = a;
  b.line = 40;
  EXPECT_TRUE(same_delivery(a, b));
  const std::vector<void (*)(SinkConfig&)> edits{
      [](SinkConfig& s) { s.name = "other"; },
      [](SinkConfig& s) { s.type = SinkType::Slack; },
      [](SinkConfig& s) { s.url = "http://b/"; },
      [](SinkConfig& s) { s.urls.push_back("http://b/"); },
      [](SinkConfig& s) { s.command = {"/bin/true"}; },
      [](SinkConfig& s) { s.timeout = std::chrono::seconds(3); },
      [](SinkConfig& s) { s.retries = 0; },
      [](SinkConfig& s) { s.retry_backoff = std::chrono::seconds(5); },
  };
  for (size_t i = 0; i < edits.size(); ++i) {
    SinkConfig c = b;
    edits[i](c);
    EXPECT_FALSE(same_delivery(a, c)) << "edit " << i;
  }
}

}  // namespace
}  // namespace gpureap::alert

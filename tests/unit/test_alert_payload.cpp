#include <gtest/gtest.h>

#include <set>

#include "alert/payload.h"

namespace gpureap::alert {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

const TimePoint kRaisedAt{std::chrono::seconds(1'700'000'000)};  // 2023-11-14T22:13:20Z

Alert gpu_alert(std::string gpu, bool resolved) {
  Alert a;
  a.labels = {
      {"alertname", "GpuMemoryHigh"}, {"severity", "warning"}, {"instance", "node1"}, {"gpu", gpu}};
  a.annotations = {{"summary", "GPU " + gpu + " memory 97% used (78 GiB of 80 GiB)"},
                   {"description", "long text"}};
  a.starts_at = kRaisedAt;
  if (resolved) a.ends_at = kRaisedAt + 90s + 250ms;
  a.generator_url = "http://node1:9842/api/v1/history?gpu=" + gpu;
  return a;
}

TEST(AlertFingerprint, IsPrometheusLabelSetFingerprint) {
  // FNV-1a 64 over name, 0xff, value, 0xff, sorted by name: the value Alertmanager computes.
  EXPECT_EQ(fingerprint({{"alertname", "GpuMemoryHigh"},
                         {"instance", "node1"},
                         {"gpu", "0"},
                         {"severity", "warning"}}),
            "f6afce77fb55e54e");
  EXPECT_EQ(fingerprint({}), "cbf29ce484222325");
  // Depends on every label and on nothing else.
  Labels a{{"alertname", "X"}, {"gpu", "0"}};
  Labels b{{"alertname", "X"}, {"gpu", "1"}};
  EXPECT_EQ(fingerprint(a), fingerprint(Labels(a)));
  EXPECT_NE(fingerprint(a), fingerprint(b));
  // Separators matter: ("ab","c") is not ("a","bc").
  EXPECT_NE(fingerprint({{"ab", "c"}}), fingerprint({{"a", "bc"}}));
}

TEST(AlertPayload, WebhookHasAlertmanagersShape) {
  Notification n{"GpuMemoryHigh", {}, {gpu_alert("0", false), gpu_alert("1", true)}};
  json j = webhook_payload(n, "team-hook", "http://node1:9842/");
  EXPECT_EQ(j["version"], "4");
  EXPECT_EQ(j["status"], "firing");  // one of them still fires
  EXPECT_EQ(j["receiver"], "team-hook");
  EXPECT_EQ(j["groupKey"], "{}:{alertname=\"GpuMemoryHigh\"}");
  EXPECT_EQ(j["truncatedAlerts"], 0);
  EXPECT_EQ(j["groupLabels"], json({{"alertname", "GpuMemoryHigh"}}));
  EXPECT_EQ(j["commonLabels"],
            json({{"alertname", "GpuMemoryHigh"}, {"severity", "warning"}, {"instance", "node1"}}));
  EXPECT_EQ(j["commonAnnotations"], json({{"description", "long text"}}));
  EXPECT_EQ(j["externalURL"], "http://node1:9842/");
  ASSERT_EQ(j["alerts"].size(), 2u);
  const json& firing = j["alerts"][0];
  EXPECT_EQ(firing["status"], "firing");
  EXPECT_EQ(firing["labels"]["gpu"], "0");
  EXPECT_EQ(firing["annotations"]["summary"], "GPU 0 memory 97% used (78 GiB of 80 GiB)");
  EXPECT_EQ(firing["startsAt"], "2023-11-14T22:13:20.000Z");
  EXPECT_EQ(firing["endsAt"], "0001-01-01T00:00:00Z");
  EXPECT_EQ(firing["generatorURL"], "http://node1:9842/api/v1/history?gpu=0");
  EXPECT_EQ(firing["fingerprint"], fingerprint(gpu_alert("0", false).labels));
  const json& resolved = j["alerts"][1];
  EXPECT_EQ(resolved["status"], "resolved");
  EXPECT_EQ(resolved["endsAt"], "2023-11-14T22:14:50.250Z");
  std::set<std::string> keys;
  for (const auto& [k, v] : firing.items()) keys.insert(k);
  EXPECT_EQ(keys, (std::set<std::string>{"status", "labels", "annotations", "startsAt", "endsAt",
                                         "generatorURL", "fingerprint"}));

  Notification done{"GpuMemoryHigh", {}, {gpu_alert("1", true)}};
  EXPECT_EQ(webhook_payload(done, "team-hook", "")["status"], "resolved");
}

TEST(AlertPayload, HostileTextStaysInsideItsJsonString) {
  Alert a = gpu_alert("0", false);
  a.labels["comm"] = "evil\"},\"x\":{\"\n\x1b[31m\xff";  // quotes, a newline, an escape, bad UTF-8
  Notification n{"PolicyActed", {}, {a}};
  std::string text = to_text(webhook_payload(n, "hook", ""));
  json back = json::parse(text);  // valid JSON
  EXPECT_FALSE(back["alerts"][0].contains("x"));
  EXPECT_EQ(back["alerts"][0]["labels"]["comm"], "evil\"},\"x\":{\"\n\x1b[31m\xEF\xBF\xBD");
  EXPECT_EQ(text.find('\n'), std::string::npos);
}

TEST(AlertPayload, SlackLinesAreReadableAndEscaped) {
  Alert firing = gpu_alert("0", false);
  Alert resolved = gpu_alert("1", true);
  Notification n{"GpuMemoryHigh", {}, {firing, resolved}};
  auto j = slack_payload(n);
  ASSERT_TRUE(j);
  EXPECT_EQ(j->size(), 1u);
  EXPECT_EQ((*j)["text"],
            "*[FIRING]* GpuMemoryHigh on node1: GPU 0 memory 97% used (78 GiB of 80 GiB)\n"
            "*[RESOLVED]* GpuMemoryHigh on node1: GPU 1 memory 97% used (78 GiB of 80 GiB)");

  // A process name cannot make a mention or a link.
  Alert hostile = gpu_alert("0", false);
  hostile.annotations["summary"] = "policy p: kill PID 1 (<!channel> & <http://x|y>)";
  auto k = slack_payload({"P", {}, {hostile}});
  ASSERT_TRUE(k);
  EXPECT_EQ((*k)["text"],
            "*[FIRING]* GpuMemoryHigh on node1: policy p: kill PID 1 (&lt;!channel&gt; &amp; "
            "&lt;http://x|y&gt;)");
  EXPECT_EQ(slack_escape("a&b<c>d"), "a&amp;b&lt;c&gt;d");
}

TEST(AlertPayload, SlackSkipsTheResolutionOfEvents) {
  Alert event = gpu_alert("0", true);
  event.event = true;
  EXPECT_FALSE(slack_payload({"PolicyActed", {}, {event}}));
  event.ends_at.reset();
  EXPECT_TRUE(slack_payload({"PolicyActed", {}, {event}}));
}

}  // namespace
}  // namespace gpureap::alert

// The alertmanager sink's payload (POST /api/v2/alerts) and its endpoint.
#include <gtest/gtest.h>

#include <regex>

#include "alert/alertmanager_payload.h"
#include "alert/alertmanager_sender.h"

namespace gpureap::alert {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

const TimePoint kAt{std::chrono::seconds(1'700'000'000)};  // 2023-11-14T22:13:20Z

Alert ghost_alert() {
  Alert a;
  a.labels = {{"alertname", "GhostHolder"},
              {"severity", "critical"},
              {"instance", "node1"},
              {"code", "ghost-holder"}};
  a.annotations = {{"summary", "PID 4242 \"evil\"\n<b>&</b> holds 1 GiB"}};
  a.starts_at = kAt;
  a.generator_url = "http://node1:9842/api/v1/findings";
  return a;
}

TEST(AlertmanagerPayload, AFiringAlertLastsForTheValidityFromNow) {
  auto j = alertmanager_payload({ghost_alert()}, kAt + 30s, 4min);
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["labels"]["alertname"], "GhostHolder");
  EXPECT_EQ(j[0]["labels"]["code"], "ghost-holder");
  EXPECT_EQ(j[0]["startsAt"], "2023-11-14T22:13:20.000Z");
  EXPECT_EQ(j[0]["endsAt"], "2023-11-14T22:17:50.000Z");
  EXPECT_EQ(j[0]["generatorURL"], "http://node1:9842/api/v1/findings");
  // Only the fields Alertmanager's API takes: it refuses unknown ones.
  for (const auto& [key, value] : j[0].items()) {
    (void)value;
    EXPECT_TRUE(key == "labels" || key == "annotations" || key == "startsAt" || key == "endsAt" ||
                key == "generatorURL")
        << key;
  }
}

TEST(AlertmanagerPayload, AResolvedAlertEndsWhenItEnded) {
  Alert a = ghost_alert();
  a.ends_at = kAt + 90s + 250ms;
  auto j = alertmanager_payload({a}, kAt + 10min);
  EXPECT_EQ(j[0]["endsAt"], "2023-11-14T22:14:50.250Z");
  EXPECT_EQ(j[0]["startsAt"], "2023-11-14T22:13:20.000Z");
}

TEST(AlertmanagerPayload, TimesAreRfc3339InUtc) {
  Alert a = ghost_alert();
  a.ends_at = kAt + 1s;
  std::regex rfc3339(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z)");
  auto j = alertmanager_payload({ghost_alert(), a}, kAt);
  for (const auto& item : j) {
    EXPECT_TRUE(std::regex_match(item["startsAt"].get<std::string>(), rfc3339)) << item;
    EXPECT_TRUE(std::regex_match(item["endsAt"].get<std::string>(), rfc3339)) << item;
  }
}

TEST(AlertmanagerPayload, UntrustedTextStaysInsideItsValue) {
  Alert a = ghost_alert();
  a.labels["process"] = "x\"}, {\"labels\": {\"alertname\": \"Forged\"";
  a.annotations["description"] = std::string("bad utf-8 \xff\xfe here");
  auto text = alertmanager_payload({a}, kAt).dump(-1, ' ', false, json::error_handler_t::replace);
  auto j = json::parse(text);  // valid JSON, one alert
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["labels"]["alertname"], "GhostHolder");
  EXPECT_EQ(j[0]["labels"]["process"], "x\"}, {\"labels\": {\"alertname\": \"Forged\"");
  EXPECT_EQ(j[0]["annotations"]["summary"], "PID 4242 \"evil\"\n<b>&</b> holds 1 GiB");
}

TEST(AlertmanagerPayload, LabelNamesAreMadeValidAndEmptyValuesLeftOut) {
  EXPECT_EQ(alertmanager_label_name("gpu"), "gpu");
  EXPECT_EQ(alertmanager_label_name("gpu-uuid"), "gpu_uuid");
  EXPECT_EQ(alertmanager_label_name("0day"), "_0day");
  EXPECT_EQ(alertmanager_label_name("a.b c"), "a_b_c");
  EXPECT_EQ(alertmanager_label_name(""), "_");
  EXPECT_EQ(alertmanager_label_name("x9_Y"), "x9_Y");
  Alert a = ghost_alert();
  a.labels["gpu-uuid"] = "GPU-1";
  a.labels["user"] = "";
  auto j = alertmanager_payload({a}, kAt);
  EXPECT_EQ(j[0]["labels"]["gpu_uuid"], "GPU-1");
  EXPECT_FALSE(j[0]["labels"].contains("gpu-uuid"));
  EXPECT_FALSE(j[0]["labels"].contains("user"));
  EXPECT_EQ(j[0]["labels"]["severity"], "critical");  // the others stay
}

TEST(AlertmanagerPayload, NoGeneratorUrlIsLeftOutNotEmpty) {
  Alert a = ghost_alert();
  a.generator_url.clear();
  EXPECT_FALSE(alertmanager_payload({a}, kAt)[0].contains("generatorURL"));
}

TEST(AlertmanagerPayload, AlertsKeepTheirOrderAndFiringOnesOutliveTheResends) {
  Alert b = ghost_alert();
  b.labels["code"] = "other";
  auto j = alertmanager_payload({ghost_alert(), b}, kAt);
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[1]["labels"]["code"], "other");
  EXPECT_GT(kAlertmanagerValidity, 2 * kAlertmanagerResend);
  EXPECT_LE(kAlertmanagerResend, 5min / 2);  // well within Alertmanager's resolve_timeout default
}

TEST(AlertmanagerEndpoint, IsTheApiUnderTheBaseUrl) {
  EXPECT_EQ(alertmanager_endpoint("http://am:9093"), "http://am:9093/api/v2/alerts");
  EXPECT_EQ(alertmanager_endpoint("http://am:9093/"), "http://am:9093/api/v2/alerts");
  EXPECT_EQ(alertmanager_endpoint("https://host/alertmanager"),
            "https://host/alertmanager/api/v2/alerts");
  EXPECT_EQ(alertmanager_endpoint("http://am:9093/api/v2/alerts"), "http://am:9093/api/v2/alerts");
}

}  // namespace
}  // namespace gpureap::alert

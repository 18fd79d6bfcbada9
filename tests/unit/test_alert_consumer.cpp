#include <gtest/gtest.h>

#include <mutex>
#include <thread>

#include "alert/alert_consumer.h"
#include "alert_samples.h"
#include "history/history.h"

namespace gpureap::alert {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using testing::GiB;
using testing::gpu_used;
using testing::sample_at;
using testing::wait_for;

// Every message any sink got, in order.
struct Inbox {
  std::mutex m;
  std::vector<std::pair<std::string, json>> got;  // sink, payload
  size_t size() {
    std::lock_guard lock(m);
    return got.size();
  }
};

class Recording : public Sender {
 public:
  Recording(std::string sink, std::shared_ptr<Inbox> inbox)
      : sink_(std::move(sink)), inbox_(std::move(inbox)) {}
  Attempt send(const Delivery& d) override {
    std::lock_guard lock(inbox_->m);
    inbox_->got.emplace_back(sink_, json::parse(d.body));
    return {true, "", ""};
  }
  std::string target() const override { return "test"; }

 private:
  std::string sink_;
  std::shared_ptr<Inbox> inbox_;
};

const exporter::MetricFamily* family(const std::vector<exporter::MetricFamily>& fs,
                                     const std::string& name) {
  for (const auto& f : fs)
    if (f.name == name) return &f;
  return nullptr;
}

SinkConfig webhook(std::string name) {
  SinkConfig s;
  s.name = std::move(name);
  return s;
}

TEST(AlertConsumer, MetricsArePresentBeforeAnySample) {
  AlertConsumer c([](const SinkConfig& s) { return make_sender(s); });
  c.apply({testing::memory_rule(0.9)}, {webhook("hook")}, "node1");
  std::vector<exporter::MetricFamily> out;
  c.add_metrics(out);
  const auto* sent = family(out, "gpureap_alerts_sent_total");
  ASSERT_TRUE(sent);
  EXPECT_EQ(sent->samples.size(), 3u);
  for (const auto& s : sent->samples) EXPECT_EQ(s.value, 0);
  const auto* firing = family(out, "gpureap_alerts_firing");
  ASSERT_TRUE(firing);
  ASSERT_EQ(firing->samples.size(), 1u);
  EXPECT_EQ(firing->samples[0].labels[0].value, "GpuMemoryHigh");
  EXPECT_EQ(firing->samples[0].value, 0);
  EXPECT_NE(exporter::render(out).find("# TYPE gpureap_alerts_sent_total counter\n"),
            std::string::npos);
}

TEST(AlertConsumer, SamplesAndPolicyRecordsReachTheSinks) {
  auto inbox = std::make_shared<Inbox>();
  AlertConsumer c(
      [inbox](const SinkConfig& s) { return std::make_unique<Recording>(s.name, inbox); });
  Rule acted;
  acted.name = "PolicyActed";
  acted.condition = Condition::PolicyAction;
  acted.sinks = {"tickets"};
  c.apply({testing::memory_rule(0.9), acted}, {webhook("hook"), webhook("tickets")}, "node1",
          "http://node1:9842/");
  history::History history;
  c.on_sample(sample_at(0s, {gpu_used(0, 95 * GiB)}), history);
  ASSERT_TRUE(wait_for([&] { return inbox->size() == 2; }));  // no rule names sinks: both get it
  EXPECT_EQ(inbox->got[0].second["status"], "firing");
  EXPECT_EQ(inbox->got[0].second["externalURL"], "http://node1:9842/");

  audit::Record r;
  r.policy = "idle";
  r.action = "kill";
  r.outcome = "released";
  r.event = "action";
  r.time = testing::kWall0;
  c.on_policy_record(r);
  ASSERT_TRUE(wait_for([&] { return inbox->size() == 3; }));
  EXPECT_EQ(inbox->got[2].first, "tickets");
  EXPECT_EQ(inbox->got[2].second["alerts"][0]["labels"]["policy"], "idle");
  std::vector<exporter::MetricFamily> out;
  c.add_metrics(out);
  EXPECT_EQ(family(out, "gpureap_alerts_firing")->samples[1].value, 1);

  // The next sample resolves the policy alert and the memory alert.
  auto later = sample_at(1s, {gpu_used(0, 10 * GiB)});
  later.taken = std::chrono::steady_clock::now() + 1s;
  c.on_sample(later, history);
  ASSERT_TRUE(wait_for([&] { return inbox->size() == 6; }));
  // A sink's worker counts a delivery after its sender returns: on a busy machine the count
  // may lag the inbox, so it is waited for, not read once.
  auto sent_to_tickets = [&] {
    std::vector<exporter::MetricFamily> now;
    c.add_metrics(now);
    double n = 0;
    for (const auto& s : family(now, "gpureap_alerts_sent_total")->samples)
      if (s.labels[0].value == "tickets" && s.labels[1].value == "success") n = s.value;
    return n;
  };
  // Memory firing and resolved, policy firing and resolved.
  EXPECT_TRUE(wait_for([&] { return sent_to_tickets() == 4; })) << sent_to_tickets();
  EXPECT_EQ(inbox->size(), 6u);
}

}  // namespace
}  // namespace gpureap::alert

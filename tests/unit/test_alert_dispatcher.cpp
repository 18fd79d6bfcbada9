#include <gtest/gtest.h>

#include <condition_variable>
#include <deque>
#include <mutex>

#include "alert/alertmanager_payload.h"
#include "alert/dispatcher.h"
#include "alert/payload.h"
#include "alert_samples.h"

namespace gpureap::alert {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using testing::wait_for;

// A sink whose answers the test scripts, recording what it was given. With `hold`, each send
// waits until the test releases it.
struct Script {
  std::mutex m;
  std::condition_variable cv;
  std::deque<bool> answers;  // empty: succeed
  std::vector<Delivery> sent;
  size_t attempts = 0;
  size_t entered = 0;
  bool hold = false;
  bool canceled = false;

  bool wait_attempts(size_t n) {
    std::unique_lock lock(m);
    return cv.wait_for(lock, 10s, [&] { return attempts >= n; });
  }
  void release() {
    std::lock_guard lock(m);
    hold = false;
    cv.notify_all();
  }
};

class FakeSender : public Sender {
 public:
  explicit FakeSender(std::shared_ptr<Script> s) : s_(std::move(s)) {}
  Attempt send(const Delivery& d) override {
    std::unique_lock lock(s_->m);
    ++s_->entered;
    s_->cv.notify_all();
    s_->cv.wait(lock, [&] { return !s_->hold || s_->canceled; });
    ++s_->attempts;
    bool ok = true;
    if (!s_->answers.empty()) {
      ok = s_->answers.front();
      s_->answers.pop_front();
    }
    if (ok) s_->sent.push_back(d);
    s_->cv.notify_all();
    return {ok, ok ? "" : "HTTP 500", ""};
  }
  void cancel() override {
    std::lock_guard lock(s_->m);
    s_->canceled = true;
    s_->cv.notify_all();
  }
  std::string target() const override { return "fake"; }

 private:
  std::shared_ptr<Script> s_;
};

SinkConfig sink(std::string name, SinkType type = SinkType::Webhook, unsigned retries = 3) {
  SinkConfig s;
  s.name = std::move(name);
  s.type = type;
  s.retries = retries;
  s.retry_backoff = 1ms;
  return s;
}

Notification note(std::string rule, std::vector<std::string> sinks = {}) {
  Alert a;
  a.labels = {{"alertname", rule}, {"instance", "node1"}};
  a.annotations = {{"summary", "something"}};
  return {std::move(rule), std::move(sinks), {a}};
}

// Scripts by sink name.
struct Fakes {
  std::map<std::string, std::shared_ptr<Script>> scripts;
  Dispatcher::SenderFactory factory() {
    return [this](const SinkConfig& c) {
      auto& s = scripts[c.name];
      if (!s) s = std::make_shared<Script>();
      return std::make_unique<FakeSender>(s);
    };
  }
};

TEST(AlertRetryDelay, DoublesFromTheBackoffUpToAnHour) {
  SinkConfig s;
  s.retry_backoff = 1s;
  EXPECT_EQ(retry_delay(s, 1), 1s);
  EXPECT_EQ(retry_delay(s, 2), 2s);
  EXPECT_EQ(retry_delay(s, 3), 4s);
  EXPECT_EQ(retry_delay(s, 20), 1h);
  s.retry_backoff = 40min;
  EXPECT_EQ(retry_delay(s, 2), 1h);
}

TEST(AlertDispatcher, RoutesToTheRulesSinksRenderedForEachType) {
  Fakes f;
  Dispatcher d(f.factory());
  d.apply({sink("hook"), sink("chat", SinkType::Slack), sink("pager", SinkType::Exec)});
  d.dispatch(note("A", {"hook", "chat"}), "http://node1:9842/");
  d.dispatch(note("B"), "http://node1:9842/");
  ASSERT_TRUE(wait_for([&] {
    return d.counts("hook")->success == 2 && d.counts("chat")->success == 2 &&
           d.counts("pager")->success == 1;
  }));
  const auto& hook = f.scripts["hook"]->sent;
  ASSERT_EQ(hook.size(), 2u);
  json j = json::parse(hook[0].body);
  EXPECT_EQ(j["receiver"], "hook");
  EXPECT_EQ(j["externalURL"], "http://node1:9842/");
  EXPECT_EQ(hook[0].alertname, "A");
  EXPECT_EQ(hook[0].status, "firing");
  EXPECT_EQ(hook[0].alerts, 1u);
  EXPECT_EQ(json::parse(f.scripts["chat"]->sent[0].body),
            json({{"text", "*[FIRING]* A on node1: something"}}));
  EXPECT_EQ(json::parse(f.scripts["pager"]->sent[0].body)["receiver"], "pager");
  EXPECT_EQ(json::parse(f.scripts["pager"]->sent[0].body)["groupLabels"]["alertname"], "B");
}

TEST(AlertDispatcher, AlertmanagerGetsItsApiArrayAndFiringAlertsAgainUntilResolved) {
  Fakes f;
  Dispatcher d(f.factory());
  d.apply({sink("am", SinkType::Alertmanager), sink("hook")});
  Notification a = note("A"), b = note("B");
  d.dispatch(a, "http://node1:9842/");
  d.dispatch(b, "http://node1:9842/");
  ASSERT_TRUE(wait_for([&] { return d.counts("am")->success == 2; }));
  json first = json::parse(f.scripts["am"]->sent[0].body);
  ASSERT_TRUE(first.is_array());
  EXPECT_EQ(first[0]["labels"]["alertname"], "A");

  const auto t0 = std::chrono::steady_clock::now();
  d.resend_firing(t0);  // the clock starts: nothing due yet
  d.resend_firing(t0 + kAlertmanagerResend - 1s);
  Notification resolved = b;
  resolved.alerts[0].ends_at = std::chrono::system_clock::now();
  d.dispatch(resolved, "http://node1:9842/");
  ASSERT_TRUE(wait_for([&] { return d.counts("am")->success == 3; }));
  d.resend_firing(t0 + kAlertmanagerResend);
  ASSERT_TRUE(wait_for([&] { return d.counts("am")->success == 4; }));
  json again = json::parse(f.scripts["am"]->sent[3].body);
  ASSERT_EQ(again.size(), 1u);  // A still fires; B was resolved and is not sent again
  EXPECT_EQ(again[0]["labels"]["alertname"], "A");
  // Not due again before another interval; the webhook sink never gets re-sends.
  d.resend_firing(t0 + kAlertmanagerResend + 1s);
  // (hook: A, B, B resolved, then C, which only it gets; the queue keeps the order)
  d.dispatch(note("C", {"hook"}), "");
  ASSERT_TRUE(wait_for([&] { return d.counts("hook")->success == 4; }));
  EXPECT_EQ(d.counts("am")->success, 4u);
  EXPECT_EQ(f.scripts["hook"]->sent.size(), 4u);
  EXPECT_EQ(f.scripts["hook"]->sent[3].alertname, "C");
}

TEST(AlertDispatcher, RetriesThenSucceedsAndCountsEachFailedAttempt) {
  Fakes f;
  Dispatcher d(f.factory());
  d.apply({sink("hook", SinkType::Webhook, 3)});
  f.scripts["hook"]->answers = {false, false, true};
  d.dispatch(note("A"), "");
  ASSERT_TRUE(wait_for([&] { return d.counts("hook")->success == 1; }));
  auto c = *d.counts("hook");
  EXPECT_EQ(c.failure, 2u);
  EXPECT_EQ(c.dropped, 0u);
  EXPECT_EQ(f.scripts["hook"]->attempts, 3u);
}

TEST(AlertDispatcher, GivesUpAfterItsRetriesAndGoesOn) {
  Fakes f;
  Dispatcher d(f.factory());
  d.apply({sink("hook", SinkType::Webhook, 2)});
  f.scripts["hook"]->answers = {false, false, false};
  d.dispatch(note("A"), "");
  d.dispatch(note("B"), "");
  ASSERT_TRUE(wait_for([&] { return d.counts("hook")->success == 1; }));
  auto c = *d.counts("hook");
  EXPECT_EQ(c.failure, 3u);  // the first attempt and 2 retries
  EXPECT_EQ(c.dropped, 1u);
  ASSERT_EQ(f.scripts["hook"]->sent.size(), 1u);
  EXPECT_EQ(f.scripts["hook"]->sent[0].alertname, "B");
}

TEST(AlertDispatcher, AFullQueueDropsTheOldestAndDispatchNeverWaits) {
  Fakes f;
  Dispatcher d(f.factory(), 2);
  d.apply({sink("hook")});
  auto& s = f.scripts["hook"];
  s->hold = true;  // the sink hangs
  d.dispatch(note("first"), "");
  ASSERT_TRUE(wait_for([&] {
    std::lock_guard lock(s->m);
    return s->entered == 1;  // the worker took "first" and waits inside send
  }));
  // Returns at once although the sink does not answer.
  for (auto name : {"A", "B", "C", "D"}) d.dispatch(note(name), "");
  EXPECT_EQ(d.counts("hook")->dropped, 2u);
  s->release();
  ASSERT_TRUE(wait_for([&] { return d.counts("hook")->success == 3; }));
  std::vector<std::string> names;
  for (const auto& x : s->sent) names.push_back(x.alertname);
  EXPECT_EQ(names.back(), "D");
  EXPECT_EQ(
      std::count(names.begin(), names.end(), "A") + std::count(names.begin(), names.end(), "B"), 0);
}

TEST(AlertDispatcher, StopCancelsASendThatHangs) {
  Fakes f;
  Dispatcher d(f.factory());
  d.apply({sink("hook")});
  f.scripts["hook"]->hold = true;
  d.dispatch(note("A"), "");
  d.dispatch(note("B"), "");
  d.stop(5s);
  EXPECT_TRUE(f.scripts["hook"]->canceled);
  auto c = *d.counts("hook");
  EXPECT_EQ(c.success + c.dropped, 2u);  // nothing is lost without being counted
}

TEST(AlertDispatcher, ReloadKeepsUnchangedSinksAndTheirCounters) {
  Fakes f;
  Dispatcher d(f.factory());
  d.apply({sink("hook"), sink("old")});
  d.dispatch(note("A"), "");
  ASSERT_TRUE(
      wait_for([&] { return d.counts("hook")->success == 1 && d.counts("old")->success == 1; }));
  auto changed = sink("hook");
  changed.timeout = 3s;
  d.apply({changed});
  d.dispatch(note("B"), "");
  ASSERT_TRUE(wait_for([&] { return d.counts("hook")->success == 2; }));
  auto m = d.sent_metric();
  EXPECT_EQ(m.name, "gpureap_alerts_sent_total");
  EXPECT_EQ(m.type, exporter::MetricType::Counter);
  ASSERT_EQ(m.samples.size(), 3u);  // only configured sinks, every result
  EXPECT_EQ(m.samples[0].labels[0].value, "hook");
  EXPECT_EQ(m.samples[0].labels[1].value, "success");
  EXPECT_EQ(m.samples[0].value, 2);
  EXPECT_EQ(m.samples[1].labels[1].value, "failure");
  EXPECT_EQ(m.samples[2].labels[1].value, "dropped");
}

}  // namespace
}  // namespace gpureap::alert

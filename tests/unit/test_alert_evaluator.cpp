#include <gtest/gtest.h>

#include "alert/evaluator.h"
#include "alert_samples.h"
#include "doctor/diagnose.h"

namespace gpureap::alert {
namespace {

using namespace std::chrono_literals;
using testing::GiB;
using testing::gpu_used;
using testing::kWall0;
using testing::memory_rule;
using testing::sample_at;

EvaluatorContext context() {
  return {"node1", "http://node1:9842/"};
}

Evaluator with(std::vector<Rule> rules) {
  Evaluator e;
  e.set_rules(std::move(rules), context(), kWall0);
  return e;
}

// The alerts of every notification, in order.
std::vector<Alert> alerts(const std::vector<Notification>& ns) {
  std::vector<Alert> out;
  for (const auto& n : ns) out.insert(out.end(), n.alerts.begin(), n.alerts.end());
  return out;
}

TEST(AlertEvaluator, MemoryRatioFiresAfterForRepeatsAndResolves) {
  auto rule = memory_rule(0.9, 30s);
  rule.repeat_interval = 10min;
  Evaluator e = with({rule});
  EXPECT_TRUE(e.evaluate(sample_at(0s, {gpu_used(0, 50 * GiB)})).empty());
  // Above from 10s: pending, not yet firing.
  EXPECT_TRUE(e.evaluate(sample_at(10s, {gpu_used(0, 97 * GiB)})).empty());
  EXPECT_TRUE(e.evaluate(sample_at(39s, {gpu_used(0, 97 * GiB)})).empty());
  auto fired = e.evaluate(sample_at(40s, {gpu_used(0, 97 * GiB)}));
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_EQ(fired[0].rule, "GpuMemoryHigh");
  ASSERT_EQ(fired[0].alerts.size(), 1u);
  const Alert& a = fired[0].alerts[0];
  EXPECT_FALSE(a.resolved());
  EXPECT_EQ(a.labels, (Labels{{"alertname", "GpuMemoryHigh"},
                              {"severity", "warning"},
                              {"instance", "node1"},
                              {"gpu", "0"},
                              {"gpu_uuid", "GPU-0"}}));
  EXPECT_EQ(a.annotations.at("summary"), "GPU 0 memory 97% used (97 GiB of 100 GiB)");
  EXPECT_NE(a.annotations.at("description").find("above the rule's 90%"), std::string::npos);
  // startsAt is when the condition began to hold, as Prometheus sends it.
  EXPECT_EQ(a.starts_at, kWall0 + 10s);
  EXPECT_EQ(a.generator_url, "http://node1:9842/api/v1/history?gpu=0");
  EXPECT_EQ(e.firing(), (std::vector<std::pair<std::string, size_t>>{{"GpuMemoryHigh", 1}}));

  // Still firing: silent until the repeat interval has passed since it was sent.
  EXPECT_TRUE(e.evaluate(sample_at(5min, {gpu_used(0, 98 * GiB)})).empty());
  auto repeated = alerts(e.evaluate(sample_at(10min + 40s, {gpu_used(0, 98 * GiB)})));
  ASSERT_EQ(repeated.size(), 1u);
  EXPECT_FALSE(repeated[0].resolved());
  EXPECT_EQ(repeated[0].annotations.at("summary"), "GPU 0 memory 98% used (98 GiB of 100 GiB)");
  EXPECT_EQ(repeated[0].starts_at, kWall0 + 10s);

  auto resolved = alerts(e.evaluate(sample_at(11min, {gpu_used(0, 40 * GiB)})));
  ASSERT_EQ(resolved.size(), 1u);
  ASSERT_TRUE(resolved[0].resolved());
  EXPECT_EQ(*resolved[0].ends_at, kWall0 + 11min);
  EXPECT_EQ(resolved[0].labels, a.labels);
  EXPECT_EQ(resolved[0].annotations.at("summary"), "GPU 0 memory 40% used (40 GiB of 100 GiB)");
  EXPECT_TRUE(e.evaluate(sample_at(12min, {gpu_used(0, 40 * GiB)})).empty());
  EXPECT_EQ(e.firing()[0].second, 0u);
}

TEST(AlertEvaluator, ADipBelowRestartsTheWait) {
  Evaluator e = with({memory_rule(0.9, 30s)});
  EXPECT_TRUE(e.evaluate(sample_at(0s, {gpu_used(0, 95 * GiB)})).empty());
  EXPECT_TRUE(e.evaluate(sample_at(20s, {gpu_used(0, 50 * GiB)})).empty());
  EXPECT_TRUE(e.evaluate(sample_at(31s, {gpu_used(0, 95 * GiB)})).empty());
  EXPECT_TRUE(e.evaluate(sample_at(60s, {gpu_used(0, 95 * GiB)})).empty());
  EXPECT_EQ(alerts(e.evaluate(sample_at(61s, {gpu_used(0, 95 * GiB)}))).size(), 1u);
}

TEST(AlertEvaluator, EachGpuIsItsOwnAlertAndTheGpuKeyFilters) {
  Evaluator e = with({memory_rule(0.9)});
  auto fired = alerts(e.evaluate(sample_at(0s, {gpu_used(0, 95 * GiB), gpu_used(1, 99 * GiB)})));
  ASSERT_EQ(fired.size(), 2u);
  EXPECT_EQ(fired[0].labels.at("gpu"), "0");
  EXPECT_EQ(fired[1].labels.at("gpu"), "1");
  EXPECT_NE(fingerprint(fired[0].labels), fingerprint(fired[1].labels));

  auto only1 = memory_rule(0.9);
  only1.gpu = 1;
  Evaluator f = with({only1});
  fired = alerts(f.evaluate(sample_at(0s, {gpu_used(0, 95 * GiB), gpu_used(1, 99 * GiB)})));
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_EQ(fired[0].labels.at("gpu"), "1");
}

TEST(AlertEvaluator, AGpuThatDisappearsResolvesItsAlert) {
  Evaluator e = with({memory_rule(0.9)});
  ASSERT_EQ(
      alerts(e.evaluate(sample_at(0s, {gpu_used(0, 95 * GiB), gpu_used(1, 95 * GiB)}))).size(), 2u);
  auto gone = alerts(e.evaluate(sample_at(1s, {gpu_used(0, 95 * GiB)})));
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_TRUE(gone[0].resolved());
  EXPECT_EQ(gone[0].labels.at("gpu"), "1");
}

TEST(AlertEvaluator, UnknownValuesNeverFireNorResolve) {
  Evaluator e = with({memory_rule(0.9)});
  core::Gpu unknown = gpu_used(0, 95 * GiB);
  unknown.memory.used_bytes.reset();
  EXPECT_TRUE(e.evaluate(sample_at(0s, {unknown})).empty());
  EXPECT_EQ(e.firing()[0].second, 0u);

  ASSERT_EQ(alerts(e.evaluate(sample_at(1s, {gpu_used(0, 95 * GiB)}))).size(), 1u);
  // The GPU errs: its memory is unknown, and so is whether the alert still holds.
  core::Gpu erring = gpu_used(0, 10 * GiB);
  erring.error = "GPU is lost";
  EXPECT_TRUE(e.evaluate(sample_at(2s, {erring})).empty());
  EXPECT_EQ(e.firing()[0].second, 1u);
  // The backend is down: nothing is known about any GPU.
  auto down = sample_at(3s, {});
  auto snap = std::make_shared<core::Snapshot>(*down.snapshot);
  snap->drivers.backends.at(0).available = false;
  down.snapshot = snap;
  EXPECT_TRUE(e.evaluate(down).empty());
  EXPECT_EQ(e.firing()[0].second, 1u);
  // Known again, and below.
  auto back = alerts(e.evaluate(sample_at(4s, {gpu_used(0, 10 * GiB)})));
  ASSERT_EQ(back.size(), 1u);
  EXPECT_TRUE(back[0].resolved());
}

TEST(AlertEvaluator, UnattributedMemory) {
  Rule r;
  r.name = "Unattributed";
  r.condition = Condition::UnattributedMemory;
  r.bytes_above = 2 * GiB;
  Evaluator e = with({r});
  using testing::holder;
  using testing::listed;
  // 10 GiB used, 9 GiB listed for a live process: 1 GiB unattributed.
  auto healthy = [](std::chrono::milliseconds at, uint64_t used) {
    return sample_at(at, {testing::gpu(0, 0, used, {listed(100, 9 * GiB)})}, {holder(100, 1, 100)});
  };
  EXPECT_TRUE(e.evaluate(healthy(0s, 10 * GiB)).empty());
  auto fired = alerts(e.evaluate(healthy(1s, 12 * GiB)));
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_EQ(fired[0].annotations.at("summary"), "GPU 0: 3.0 GiB in use by no listed process");
  // Process lists that failed validation: attribution unknown, the alert stays.
  core::Gpu bad = testing::gpu(0, 0, 20 * GiB, {});
  bad.processes_error = "records failed validation";
  EXPECT_TRUE(e.evaluate(sample_at(2s, {bad}, {holder(100, 1, 100)})).empty());
  EXPECT_EQ(e.firing()[0].second, 1u);
  auto resolved = alerts(e.evaluate(healthy(3s, 9 * GiB)));
  ASSERT_EQ(resolved.size(), 1u);
  EXPECT_TRUE(resolved[0].resolved());
}

TEST(AlertEvaluator, GhostMemoryOfAGonePid) {
  Rule r;
  r.name = "Ghosts";
  r.condition = Condition::GhostMemory;
  r.bytes_above = 1 * GiB;
  Evaluator e = with({r});
  using testing::listed;
  // PID 4242 is listed with 8 GiB and is not in /proc; the daemon's doctor ran on the sample.
  auto sample = sample_at(0s, {testing::gpu(0, 0, 8 * GiB, {listed(4242, 8 * GiB)})});
  sample.findings = doctor::diagnose({*sample.snapshot, *sample.snapshot});
  const doctor::Finding* gone = nullptr;
  for (const auto& f : sample.findings)
    if (f.gpus == std::vector<unsigned>{0} && !f.remedy.empty()) gone = &f;
  ASSERT_NE(gone, nullptr);
  auto fired = alerts(e.evaluate(sample));
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_EQ(fired[0].annotations.at("summary"), "GPU 0: 8.0 GiB held for processes that are gone");
  // Doctor's remedy for it, in doctor's words; never a command of the alert's own.
  const auto& description = fired[0].annotations.at("description");
  EXPECT_NE(description.find("`" + gone->remedy.front().line() + "`"), std::string::npos)
      << description;
  EXPECT_NE(description.find("`gpureap doctor --gpu 0`"), std::string::npos) << description;
  EXPECT_EQ(description.find("kill --ghosts"), std::string::npos) << description;
  auto resolved = alerts(e.evaluate(sample_at(1s, {testing::gpu(0, 0, 0, {})})));
  ASSERT_EQ(resolved.size(), 1u);
  EXPECT_TRUE(resolved[0].resolved());
}

doctor::Finding finding(std::string code, doctor::Severity sev, std::vector<unsigned> gpus,
                        std::vector<pid_t> pids) {
  doctor::Finding f;
  f.code = *doctor::finding_code_from_string(code);
  f.severity = sev;
  f.gpus = std::move(gpus);
  f.pids = std::move(pids);
  f.memory_bytes = 8 * GiB;
  f.explanation = "The driver lists a PID that no longer exists.";
  f.evidence = {"PID 4242 is listed with 8.0 GiB"};
  f.remedy = {"gpureap kill --ghosts"};
  return f;
}

TEST(AlertEvaluator, FindingsByCodeAndGpusHoldForThenResolve) {
  Rule r;
  r.name = "Ghost";
  r.condition = Condition::Finding;
  r.finding_code = doctor::FindingCode::NoSuchProcess;
  r.for_duration = 5s;
  Evaluator e = with({r});
  auto with_findings = [](std::chrono::milliseconds at, std::vector<doctor::Finding> f) {
    return sample_at(at, {gpu_used(0, 8 * GiB)}, {}, std::move(f));
  };
  const auto gone = finding("no-such-process", doctor::Severity::Critical, {0}, {4242});
  const auto other = finding("stopped-holder", doctor::Severity::Warning, {0}, {77});
  EXPECT_TRUE(e.evaluate(with_findings(0s, {gone, other})).empty());
  // A second gone PID on the same GPU is the same alert, not a new one.
  auto second = finding("no-such-process", doctor::Severity::Critical, {0}, {4243});
  auto fired = alerts(e.evaluate(with_findings(5s, {gone, second, other})));
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_EQ(fired[0].labels.at("code"), "no-such-process");
  EXPECT_EQ(fired[0].labels.at("gpu"), "0");
  EXPECT_EQ(fired[0].annotations.at("summary"),
            "no-such-process (critical) on GPU 0, 16 GiB, PID 4242, 4243");
  EXPECT_NE(fired[0].annotations.at("description").find("Fix: gpureap kill --ghosts"),
            std::string::npos);
  EXPECT_EQ(fired[0].generator_url, "http://node1:9842/api/v1/findings");
  // The same finding on another GPU is another alert.
  auto on1 = finding("no-such-process", doctor::Severity::Critical, {1}, {5000});
  EXPECT_TRUE(e.evaluate(with_findings(6s, {gone, on1})).empty());
  auto resolved = alerts(e.evaluate(with_findings(7s, {on1})));
  ASSERT_EQ(resolved.size(), 1u);
  EXPECT_TRUE(resolved[0].resolved());
  EXPECT_EQ(resolved[0].labels.at("gpu"), "0");
  // The GPU 1 one was pending; it fires once it has held for 5 s.
  EXPECT_EQ(alerts(e.evaluate(with_findings(11s, {on1}))).size(), 1u);
}

// A ghost's keeper that is an orphan is a facet of the ghost's finding: a rule on
// orphan-holder still fires on it, and its alert keeps the rule's code as its label.
TEST(AlertEvaluator, ARuleOnACodeMatchesTheFindingThatCarriesItAsAFacet) {
  Rule r;
  r.name = "Orphans";
  r.condition = Condition::Finding;
  r.finding_code = doctor::FindingCode::OrphanHolder;
  Evaluator e = with({r});
  auto ghost = finding("no-such-process", doctor::Severity::Critical, {0}, {4242, 4250});
  ghost.facets = {{doctor::FindingCode::OrphanHolder, 4250, doctor::Severity::Warning,
                   "PID 4250 (w) is an orphan"}};
  auto fired = alerts(e.evaluate(sample_at(0s, {gpu_used(0, 8 * GiB)}, {}, {ghost})));
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_EQ(fired[0].labels.at("code"), "orphan-holder");
  EXPECT_EQ(fired[0].annotations.at("summary").rfind("orphan-holder (critical) on GPU 0", 0), 0u)
      << fired[0].annotations.at("summary");
  auto plain = finding("no-such-process", doctor::Severity::Critical, {0}, {4243});
  Evaluator none = with({r});
  EXPECT_TRUE(none.evaluate(sample_at(0s, {gpu_used(0, 8 * GiB)}, {}, {plain})).empty());
}

TEST(AlertEvaluator, FindingsBySeverityAndGpu) {
  Rule r;
  r.name = "Critical";
  r.condition = Condition::Finding;
  r.finding_severity = doctor::Severity::Critical;
  r.gpu = 1;
  Evaluator e = with({r});
  auto fired = alerts(
      e.evaluate(sample_at(0s, {gpu_used(0, 0), gpu_used(1, 0)}, {},
                           {finding("no-such-process", doctor::Severity::Critical, {0}, {1}),
                            finding("stopped-holder", doctor::Severity::Warning, {1}, {2}),
                            finding("leaked-memory", doctor::Severity::Critical, {1}, {3})})));
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_EQ(fired[0].labels.at("code"), "leaked-memory");
}

// The built-in condition for the kernel log's GPU errors: a critical Xid (79, 95, 48, ...)
// makes doctor's gpu-xid finding critical on that GPU; an application's Xid 31 stays a warning.
TEST(AlertEvaluator, ACriticalXidFiresTheGpuXidRuleOfItsGpuOnly) {
  Rule r;
  r.name = "GpuKernelError";
  r.condition = Condition::Finding;
  r.finding_code = doctor::FindingCode::GpuKernelError;
  r.finding_severity = doctor::Severity::Critical;
  Evaluator e = with({r});
  auto gpus = std::vector<core::Gpu>{gpu_used(0, 0), gpu_used(1, 0)};
  EXPECT_TRUE(e.evaluate(sample_at(0s, gpus, {},
                                   {finding("gpu-xid", doctor::Severity::Warning, {1}, {4242})}))
                  .empty());
  auto fired =
      alerts(e.evaluate(sample_at(1s, gpus, {},
                                  {finding("gpu-xid", doctor::Severity::Critical, {0}, {}),
                                   finding("gpu-xid", doctor::Severity::Warning, {1}, {4242})})));
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_EQ(fired[0].labels.at("code"), "gpu-xid");
  EXPECT_EQ(fired[0].labels.at("gpu"), "0");
}

TEST(AlertEvaluator, DriverTimeoutKeepsFindingAlerts) {
  Rule r;
  r.name = "Ghost";
  r.condition = Condition::Finding;
  r.finding_code = doctor::FindingCode::NoSuchProcess;
  Evaluator e = with({r});
  auto f = finding("no-such-process", doctor::Severity::Critical, {0}, {4242});
  ASSERT_EQ(alerts(e.evaluate(sample_at(0s, {gpu_used(0, 0)}, {}, {f}))).size(), 1u);
  auto timed_out = sample_at(1s, {});
  timed_out.driver_timed_out = true;
  EXPECT_TRUE(e.evaluate(timed_out).empty());
  EXPECT_EQ(e.firing()[0].second, 1u);
}

audit::Record record(std::string policy, std::string outcome) {
  audit::Record r;
  r.time = kWall0 + 3s;
  r.host = "node1";
  r.event = "action";
  r.policy = std::move(policy);
  r.action = "terminate";
  r.enforced = true;
  r.outcome = std::move(outcome);
  r.process.pid = 4242;
  r.process.user = "alice";
  r.process.comm = "python";
  r.process.cmdline = {"python", "train.py"};
  r.memory = {{0, 8 * GiB}};
  r.released_bytes = 8 * GiB;
  r.reasons = {"idle for 2h"};
  return r;
}

// A process's name and argv are anyone's to set: a newline in them leaves the alert's label,
// summary and description one line each.
TEST(AlertEvaluator, APolicyAlertKeepsANameWithANewlineOnOneLine) {
  Rule any;
  any.name = "PolicyActed";
  any.condition = Condition::PolicyAction;
  Evaluator e = with({any});
  auto r = record("idle", "released");
  r.process.comm = "evil\nrm -rf /";
  r.process.cmdline = {"python", "x\ny"};
  r.process.container = "c\r1";
  auto fired = e.on_policy_record(r, testing::kT0 + 3s);
  ASSERT_EQ(fired.size(), 1u);
  const Alert& a = fired[0].alerts.at(0);
  EXPECT_EQ(a.labels.at("comm"), "evil\\nrm -rf /");
  for (const auto& [name, text] : a.annotations)
    EXPECT_EQ(text.find_first_of("\n\r"), std::string::npos) << name << ": " << text;
  EXPECT_NE(a.annotations.at("summary").find("PID 4242 (evil\\nrm -rf /"), std::string::npos);
  EXPECT_NE(a.annotations.at("description").find("Command: python x\\ny."), std::string::npos)
      << a.annotations.at("description");
}

TEST(AlertEvaluator, APolicyActionFiresOnceAndResolvesAtTheNextSample) {
  Rule any;
  any.name = "PolicyActed";
  any.condition = Condition::PolicyAction;
  Rule only;
  only.name = "IdleKilled";
  only.condition = Condition::PolicyAction;
  only.policy = "idle";
  Evaluator e = with({any, only});

  auto fired = e.on_policy_record(record("stuck", "released"), testing::kT0 + 3s);
  ASSERT_EQ(fired.size(), 1u);  // only the rule without a policy filter takes it
  EXPECT_EQ(fired[0].rule, "PolicyActed");
  fired = e.on_policy_record(record("idle", "released"), testing::kT0 + 4s);
  ASSERT_EQ(fired.size(), 2u);
  const Alert& a = fired[1].alerts.at(0);
  EXPECT_TRUE(a.event);
  EXPECT_FALSE(a.resolved());
  EXPECT_EQ(a.starts_at, kWall0 + 3s);
  EXPECT_EQ(a.labels, (Labels{{"alertname", "IdleKilled"},
                              {"severity", "warning"},
                              {"instance", "node1"},
                              {"policy", "idle"},
                              {"action", "terminate"},
                              {"outcome", "released"},
                              {"event", "action"},
                              {"pid", "4242"},
                              {"comm", "python"},
                              {"user", "alice"},
                              {"gpu", "0"}}));
  EXPECT_EQ(
      a.annotations.at("summary"),
      "policy idle: terminate PID 4242 (python, user alice) on GPU 0: released (8.0 GiB freed)");
  EXPECT_EQ(e.firing(),
            (std::vector<std::pair<std::string, size_t>>{{"PolicyActed", 2}, {"IdleKilled", 1}}));

  // A sample taken before the record (the record came in while consumers ran) leaves it open.
  EXPECT_TRUE(e.evaluate(sample_at(2s, {gpu_used(0, 0)})).empty());
  auto resolved = alerts(e.evaluate(sample_at(5s, {gpu_used(0, 0)})));
  ASSERT_EQ(resolved.size(), 3u);
  for (const auto& r : resolved) {
    EXPECT_TRUE(r.resolved());
    EXPECT_EQ(*r.ends_at, kWall0 + 5s);
  }
  EXPECT_EQ(resolved[2].labels, a.labels);
  EXPECT_TRUE(e.evaluate(sample_at(6s, {gpu_used(0, 0)})).empty());
}

TEST(AlertEvaluator, ReloadKeepsStateOfRulesThatStayAndResolvesTheOthers) {
  auto high = memory_rule(0.9);
  auto other = memory_rule(0.5);
  other.name = "GpuMemoryHalf";
  Evaluator e = with({high, other});
  ASSERT_EQ(alerts(e.evaluate(sample_at(0s, {gpu_used(0, 95 * GiB)}))).size(), 2u);

  // GpuMemoryHigh stays (with a new threshold), GpuMemoryHalf is gone.
  auto higher = memory_rule(0.92);
  auto resolved = e.set_rules({higher}, context(), kWall0 + 1s);
  ASSERT_EQ(resolved.size(), 1u);
  EXPECT_EQ(resolved[0].rule, "GpuMemoryHalf");
  ASSERT_EQ(resolved[0].alerts.size(), 1u);
  EXPECT_EQ(*resolved[0].alerts[0].ends_at, kWall0 + 1s);
  // Still firing, not sent again: it was not resolved.
  EXPECT_TRUE(e.evaluate(sample_at(2s, {gpu_used(0, 95 * GiB)})).empty());
  EXPECT_EQ(e.firing(), (std::vector<std::pair<std::string, size_t>>{{"GpuMemoryHigh", 1}}));

  // A changed severity is a different alert to receivers: the old one is resolved.
  auto critical = higher;
  critical.severity = "critical";
  resolved = e.set_rules({critical}, context(), kWall0 + 3s);
  ASSERT_EQ(resolved.size(), 1u);
  EXPECT_EQ(resolved[0].alerts[0].labels.at("severity"), "warning");
  auto again = alerts(e.evaluate(sample_at(4s, {gpu_used(0, 95 * GiB)})));
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].labels.at("severity"), "critical");
}

}  // namespace
}  // namespace gpureap::alert

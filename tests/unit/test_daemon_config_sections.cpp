// [[policy]], [[alert]] and [[sink]] tables of the daemon's config.
#include <gtest/gtest.h>

#include "daemon/config.h"

namespace gpureap::daemon {
namespace {

using namespace std::chrono_literals;

std::string problems(const std::string& text) {
  auto r = parse_config(text, "t.toml");
  EXPECT_FALSE(r.ok()) << text;
  return r.ok() ? "" : r.error().message;
}

TEST(DaemonConfigSections, APolicyWithEveryKey) {
  auto c = parse_config(R"(
enforce = true
[[policy]]
name = "stale"
user = "alice"
command = "python*"
container = "*"
gpu = 1
anomalies = ["orphan", "inherited-holder"]
min_memory = "1.5GiB"
idle = "30m"
idle_below = 3
runtime = "2h"
after = "5m"
action = "terminate"
grace = "20s"
)",
                        "t.toml");
  ASSERT_TRUE(c.ok()) << c.error().text();
  EXPECT_TRUE(c->enforce);
  ASSERT_EQ(c->policies.size(), 1u);
  const auto& p = c->policies[0];
  EXPECT_EQ(p.name, "stale");
  EXPECT_EQ(p.line, 3u);
  EXPECT_EQ(p.user, "alice");
  EXPECT_EQ(p.gpu, 1u);
  EXPECT_EQ(p.anomalies,
            (std::vector<core::Anomaly>{core::Anomaly::Orphan, core::Anomaly::InheritedHolder}));
  EXPECT_EQ(p.min_memory, 3ull << 29);
  EXPECT_EQ(p.idle, 30min);
  EXPECT_EQ(p.idle_below, 3u);
  EXPECT_EQ(p.runtime, 2h);
  EXPECT_EQ(p.after, 5min);
  EXPECT_EQ(p.action, policy::Action::Terminate);
  EXPECT_EQ(p.grace, 20s);
}

TEST(DaemonConfigSections, EnforcementIsOffAndTheAuditLogHasItsDefaults) {
  auto c = parse_config("", "t.toml");
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->enforce);
  EXPECT_EQ(c->audit_log, "/var/log/gpureap/audit.jsonl");
  EXPECT_EQ(c->audit_max_bytes, 64ull << 20);
  EXPECT_EQ(c->audit_keep, 5u);
}

TEST(DaemonConfigSections, PolicyProblemsAreReportedAtTheirLinesInFileOrder) {
  auto p = problems(R"([[policy]]
name = "a"
anomalies = ["orphan", "bogus"]
after = "5 parsecs"

[[policy]]
name = "a"
user = "alice"
uid = 1000
action = "kill"
grace = "5s"
idle_below = 3
)");
  EXPECT_NE(p.find("t.toml:3:"), std::string::npos) << p;
  EXPECT_NE(p.find("unknown anomaly \"bogus\" (known: stopped,"), std::string::npos) << p;
  EXPECT_NE(p.find("t.toml:4:9: after:"), std::string::npos) << p;
  EXPECT_NE(p.find("another [[policy]] is already named \"a\""), std::string::npos) << p;
  EXPECT_NE(p.find("give user or uid, not both"), std::string::npos) << p;
  EXPECT_NE(p.find("grace applies only to action = \"terminate\""), std::string::npos) << p;
  EXPECT_NE(p.find("idle_below needs idle"), std::string::npos) << p;
  EXPECT_LT(p.find("t.toml:3:"), p.find("t.toml:9:")) << p;
}

TEST(DaemonConfigSections, APolicyWithoutConditionOrActingOnLeakedMemoryIsRefused) {
  EXPECT_NE(problems("[[policy]]\nname = \"all\"\naction = \"kill\"\n").find("has no condition"),
            std::string::npos);
  EXPECT_NE(problems("[[policy]]\nname = \"l\"\nanomalies = [\"leaked\"]\naction = \"terminate\"\n")
                .find("no process here that could be ended"),
            std::string::npos);
  EXPECT_TRUE(parse_config("[[policy]]\nname = \"l\"\nanomalies = [\"leaked\"]\n", "t.toml").ok());
}

TEST(DaemonConfigSections, IdleLongerThanTheHistoryCannotBeKnown) {
  auto p = problems("history = \"1h\"\n[[policy]]\nname = \"i\"\nidle = \"2h\"\n");
  EXPECT_NE(p.find("t.toml:4:8: policy \"i\": idle (2h00m) is longer than history (1h00m)"),
            std::string::npos)
      << p;
}

TEST(DaemonConfigSections, UnknownKeysInATableAreNamedWithASuggestion) {
  auto p = problems("[[policy]]\nname = \"x\"\nuser = \"a\"\nmin_mem = \"1GiB\"\n");
  EXPECT_NE(p.find("t.toml:4:1: [[policy]] unknown key \"min_mem\""), std::string::npos) << p;
  p = problems("[[sink]]\nname = \"s\"\ntype = \"webhook\"\nurl = \"http://x\"\ntimout = \"1s\"\n");
  EXPECT_NE(p.find("did you mean \"timeout\"?"), std::string::npos) << p;
}

TEST(DaemonConfigSections, AlertsAndSinks) {
  auto c = parse_config(R"(
[[alert]]
name = "full"
condition = "memory_ratio"
above = 0.9
for = "5m"
sinks = ["ops"]

[[alert]]
name = "ghosts"
condition = "ghost_memory"
above = "1GiB"
gpu = 0
repeat_interval = "1h"
severity = "critical"

[[alert]]
name = "leak"
condition = "finding"
code = "leaked-memory"

[[sink]]
name = "ops"
type = "webhook"
url = "https://alertmanager.example/api/v2/alerts"

[[sink]]
name = "page"
type = "exec"
command = ["/usr/local/bin/page", "--team", "gpu"]
timeout = "5s"
retries = 2
retry_backoff = "500ms"
)",
                        "t.toml");
  ASSERT_TRUE(c.ok()) << c.error().text();
  ASSERT_EQ(c->alerts.size(), 3u);
  EXPECT_EQ(c->alerts[0].condition, alert::Condition::MemoryRatio);
  EXPECT_DOUBLE_EQ(c->alerts[0].ratio_above, 0.9);
  EXPECT_EQ(c->alerts[0].for_duration, 5min);
  EXPECT_EQ(c->alerts[1].bytes_above, 1ull << 30);
  EXPECT_EQ(c->alerts[1].gpu, 0u);
  EXPECT_EQ(c->alerts[1].severity, "critical");
  EXPECT_EQ(c->alerts[2].finding_code, doctor::FindingCode::LeakedMemory);
  ASSERT_EQ(c->sinks.size(), 2u);
  EXPECT_EQ(c->sinks[1].type, alert::SinkType::Exec);
  EXPECT_EQ(c->sinks[1].command.size(), 3u);
  EXPECT_EQ(c->sinks[1].retries, 2u);
  EXPECT_EQ(c->sinks[1].retry_backoff, 500ms);
}

TEST(DaemonConfigSections, AlertAndSinkProblems) {
  auto p = problems(R"([[alert]]
name = "r"
condition = "memory_ratio"
above = "lots"
sinks = ["nowhere"]

[[alert]]
name = "f"
condition = "finding"
code = "no-such-finding"
above = 3

[[alert]]
name = "a"
condition = "policy_action"
policy = "missing"
for = "1m"

[[sink]]
name = "s"
type = "exec"
url = "http://x"
command = ["relative"]
)");
  EXPECT_NE(p.find("t.toml:4:9: above must be a number from 0 to 1"), std::string::npos) << p;
  EXPECT_NE(p.find("no [[sink]] is named \"nowhere\""), std::string::npos) << p;
  EXPECT_NE(p.find("unknown finding code \"no-such-finding\""), std::string::npos) << p;
  EXPECT_NE(p.find("above does not apply to condition = \"finding\""), std::string::npos) << p;
  EXPECT_NE(p.find("no [[policy]] is named \"missing\""), std::string::npos) << p;
  EXPECT_NE(p.find("for does not apply to condition = \"policy_action\""), std::string::npos) << p;
  EXPECT_NE(p.find("an exec sink runs command"), std::string::npos) << p;
  EXPECT_NE(p.find("the program must be an absolute path"), std::string::npos) << p;
}

TEST(DaemonConfigSections, AMemoryRatioMayBeAPercentage) {
  const char* sink = "[[sink]]\nname = \"s\"\ntype = \"webhook\"\nurl = \"http://x\"\n";
  auto c = parse_config(
      std::string("[[alert]]\nname = \"a\"\ncondition = \"memory_ratio\"\nabove = \"95%\"\n") +
          sink,
      "t.toml");
  ASSERT_TRUE(c.ok()) << c.error().text();
  EXPECT_DOUBLE_EQ(c->alerts[0].ratio_above, 0.95);
  auto p = problems(
      std::string("[[alert]]\nname = \"a\"\ncondition = \"memory_ratio\"\nabove = \"150%\"\n") +
      sink);
  EXPECT_NE(p.find("t.toml:4:9: above must be a ratio from 0 to 1 (0.95) or a percentage"),
            std::string::npos)
      << p;
}

TEST(DaemonConfigSections, AnExecCommandGivenAsOneStringRunsInTheShell) {
  auto c = parse_config(
      "[[sink]]\nname = \"s\"\ntype = \"exec\"\ncommand = \"page --team gpu | logger\"\n",
      "t.toml");
  ASSERT_TRUE(c.ok()) << c.error().text();
  EXPECT_EQ(c->sinks[0].command,
            (std::vector<std::string>{"/bin/sh", "-c", "page --team gpu | logger"}));
}

TEST(DaemonConfigSections, AnAlertmanagerSinkTakesOneUrlOrAnHaPair) {
  auto c = parse_config(R"([[sink]]
name = "am"
type = "alertmanager"
url = ["http://am1:9093", "http://am2:9093/"]

[[sink]]
name = "one"
type = "alertmanager"
url = "http://am:9093"
)",
                        "t.toml");
  ASSERT_TRUE(c.ok()) << c.error().text();
  EXPECT_EQ(c->sinks[0].type, alert::SinkType::Alertmanager);
  EXPECT_EQ(c->sinks[0].urls, (std::vector<std::string>{"http://am1:9093", "http://am2:9093/"}));
  EXPECT_EQ(c->sinks[1].urls, (std::vector<std::string>{"http://am:9093"}));
  EXPECT_EQ(c->sinks[1].url, "http://am:9093");
}

TEST(DaemonConfigSections, AlertmanagerSinkProblems) {
  auto p = problems(R"([[sink]]
name = "a"
type = "alertmanager"

[[sink]]
name = "b"
type = "alertmanager"
url = ["http://am1:9093", "am2:9093"]

[[sink]]
name = "c"
type = "webhook"
url = ["http://x", "http://y"]

[[sink]]
name = "d"
type = "alertmanager"
url = []

[[sink]]
name = "e"
type = "alertmanager"
url = "http://am:9093"
command = ["/bin/true"]
)");
  EXPECT_NE(p.find("sink \"a\": needs url"), std::string::npos) << p;
  EXPECT_NE(p.find("t.toml:8:7: url must start with http:// or https://"), std::string::npos) << p;
  EXPECT_NE(p.find("sink \"c\": a list of urls is for type = \"alertmanager\""), std::string::npos)
      << p;
  EXPECT_NE(p.find("url must be a string or a non-empty"), std::string::npos) << p;
  EXPECT_NE(p.find("sink \"e\": command is for type = \"exec\""), std::string::npos) << p;
  p = problems("[[sink]]\nname = \"s\"\ntype = \"prometheus\"\nurl = \"http://x\"\n");
  EXPECT_NE(p.find("webhook, slack, exec, alertmanager"), std::string::npos) << p;
}

TEST(DaemonConfigSections, AnAlertNeedsASink) {
  auto p =
      problems("[[alert]]\nname = \"x\"\ncondition = \"finding\"\nmin_severity = \"critical\"\n");
  EXPECT_NE(p.find("has nowhere to go: add a [[sink]]"), std::string::npos) << p;
}

TEST(DaemonConfigSections, ATableWrittenAsAPlainKeyIsExplained) {
  auto p = problems("policy = \"x\"\n");
  EXPECT_NE(p.find("write each policy as its own [[policy]] table"), std::string::npos) << p;
}

}  // namespace
}  // namespace gpureap::daemon

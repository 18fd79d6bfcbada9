// Cleanup policies in the daemon, against real processes and the NVML test double.
#include <gtest/gtest.h>
#include <sys/prctl.h>

#include <fstream>
#include <sstream>

#include "support.h"

namespace gpureap::testing {
namespace {

using nlohmann::json;

json policy_scenario(json processes) {
  return {
      {"gpus",
       {{{"name", "NVIDIA H200"}, {"uuid", "GPU-0000"}, {"minor", 0}, {"processes", processes}}}}};
}

// A daemon config: fast samples, holder scans on every sample, the audit log in `dir`.
std::string write_policy_config(const TempDir& dir, const std::string& body) {
  std::ofstream(dir.file("config.toml"))
      << "interval = \"200ms\"\nholder_scan_interval = \"200ms\"\n"
      << "audit_log = \"" << dir.file("audit.jsonl") << "\"\n"
      << body;
  return dir.file("config.toml");
}

std::string series(const std::string& policy, const std::string& action,
                   const std::string& result) {
  return "gpureap_policy_actions_total{policy=\"" + policy + "\",action=\"" + action +
         "\",result=\"" + result + "\"} ";
}

// The audit log's records.
std::vector<json> audit_records(const TempDir& dir) {
  return read_json_lines(dir.file("audit.jsonl"));
}

// A trainer that died and left its forked worker (same process group) holding the GPU: the
// driver still lists the trainer's 6 GiB, kept alive by the worker (an inherited holder).
struct GhostHolder {
  FakeDevRoot dev;
  pid_t trainer = 0;
  pid_t worker = 0;
  std::unique_ptr<GoneTrainer> gone;  // its destructor kills the worker
  std::unique_ptr<FakeNvml> nvml;

  GhostHolder() {
    gone = gone_trainer(dev);
    trainer = gone->trainer;
    worker = gone->worker;
    nvml = std::make_unique<FakeNvml>(policy_scenario(json::array(
        {{{"pid", trainer}, {"used_bytes", 6 * GiB}, {"holders", {worker}}, {"name", "python"}}})));
  }
};

TEST(DaemonPolicies, AnEnforcedPolicyEndsAGhostHolderOnlyAfterItsDelay) {
  REQUIRE_DOUBLE();
  GhostHolder g;
  TempDir cfg;
  auto config = write_policy_config(cfg, R"(enforce = true
[[policy]]
name = "ghosts"
anomalies = ["inherited-holder"]
after = "3s"
action = "terminate"
grace = "2s"
)");
  DaemonProcess d({"--config", config, "--dev-root", g.dev.path()}, g.nvml->env());
  ASSERT_GT(d.port(), 0) << d.log();
  ASSERT_TRUE(wait_until([&] {
    return d.metric("gpureap_policy_matching_processes{policy=\"ghosts\"} ") == 1;
  })) << d.log();
  // Matching, but not for 3 s yet: nothing was done.
  EXPECT_TRUE(is_alive(g.worker));
  EXPECT_EQ(d.log().find("policy ghosts: terminate"), std::string::npos) << d.log();

  ASSERT_TRUE(wait_gone(g.worker, 20000)) << d.log();
  ASSERT_TRUE(wait_until([&] { return d.metric(series("ghosts", "terminate", "released")) == 1; }))
      << d.log();
  EXPECT_TRUE(d.wait_log("policy ghosts: terminate PID " + std::to_string(g.worker)));
  EXPECT_TRUE(d.wait_log("released")) << d.log();

  // The audit trail: the decision, then the action with the memory it got back.
  auto records = audit_records(cfg);
  ASSERT_EQ(records.size(), 2u) << read_text(cfg.file("audit.jsonl"));
  const json& decision = records[0];
  EXPECT_EQ(decision["event"], "decision");
  EXPECT_EQ(decision["policy"], "ghosts");
  EXPECT_EQ(decision["action"], "terminate");
  EXPECT_EQ(decision["enforced"], true);
  EXPECT_EQ(decision["outcome"], "acting");
  EXPECT_EQ(decision["process"]["pid"], g.worker);
  EXPECT_TRUE(decision["process"]["start_ticks"].is_number());
  EXPECT_TRUE(decision["process"]["start_time"].is_string());
  EXPECT_EQ(decision["reasons"], json::array({"inherited-holder"}));
  const json& action = records[1];
  EXPECT_EQ(action["event"], "action");
  EXPECT_EQ(action["outcome"], "released");
  EXPECT_EQ(action["attempt"], 1);
  EXPECT_EQ(action["released_bytes"], 6 * GiB);
  EXPECT_EQ(action["process"]["start_ticks"], decision["process"]["start_ticks"]);
  // The worker held the device files last: the kernel's final close is the release time, no
  // later than the action's record. Only where the daemon follows the kernel's events (root,
  // and a kernel and sandbox that grant fanotify and the proc connector): else it has none.
  bool events =
      nlohmann::json::parse(d.get("/api/v1/releases").body, nullptr, false).value("tracking", "") ==
      "events";
  if (events) {
    ASSERT_TRUE(action["released_at"].is_string()) << action.dump();
    EXPECT_LE(action["released_at"].get<std::string>(), action["time"].get<std::string>());
  }

  // ... which `gpureap audit` reads back.
  auto r = run_gpureap({"audit", "--file", cfg.file("audit.jsonl"), "--no-color"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("released"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(std::to_string(g.worker)), std::string::npos) << r.out;
}

TEST(DaemonPolicies, TheApiShowsWhereEachMatchStands) {
  REQUIRE_DOUBLE();
  GhostHolder g;
  TempDir cfg;
  auto config = write_policy_config(cfg, R"(enforce = true
[[policy]]
name = "ghosts"
anomalies = ["inherited-holder"]
after = "1h"
action = "terminate"
)");
  DaemonProcess d({"--config", config, "--dev-root", g.dev.path()}, g.nvml->env());
  ASSERT_GT(d.port(), 0) << d.log();
  json doc;
  ASSERT_TRUE(wait_until([&] {
    auto r = d.get("/api/v1/policies");
    doc = json::parse(r.body, nullptr, false);
    return r.status == 200 && doc["policies"][0]["matching"] == 1;
  })) << doc.dump(2);
  EXPECT_EQ(doc["schema"], "gpureap.policies/v1");
  EXPECT_EQ(doc["enforce"], true);
  const json& p = doc["policies"][0];
  EXPECT_EQ(p["name"], "ghosts");
  EXPECT_EQ(p["action"], "terminate");
  EXPECT_EQ(p["after_seconds"], 3600.0);
  auto worker = entry_of(p["processes"], g.worker);
  EXPECT_EQ(worker["state"], "waiting") << p.dump(2);
  EXPECT_GT(worker["acts_in_seconds"].get<double>(), 3000.0) << p.dump(2);
  EXPECT_LE(worker["acts_in_seconds"].get<double>(), 3600.0) << p.dump(2);
  EXPECT_TRUE(worker["start_ticks"].is_number());
  EXPECT_TRUE(is_alive(g.worker));
}

TEST(DaemonPolicies, AnUnenforcedPolicyOnlyLogsWhatItWouldDoOnce) {
  REQUIRE_DOUBLE();
  GhostHolder g;
  TempDir cfg;
  auto config = write_policy_config(cfg, R"(
[[policy]]
name = "ghosts"
anomalies = ["inherited-holder"]
action = "kill"
)");
  DaemonProcess d({"--config", config, "--dev-root", g.dev.path()}, g.nvml->env());
  ASSERT_GT(d.port(), 0) << d.log();
  ASSERT_TRUE(wait_until([&] { return d.metric(series("ghosts", "kill", "would-kill")) == 1; }))
      << d.log();
  EXPECT_TRUE(d.wait_log("policy ghosts: would kill PID " + std::to_string(g.worker)));
  EXPECT_TRUE(d.wait_log("(enforce is off)"));
  // Many samples later: still alive, and logged once.
  ASSERT_TRUE(wait_new_samples(d, 10)) << d.log();
  EXPECT_TRUE(is_alive(g.worker));
  EXPECT_EQ(d.metric(series("ghosts", "kill", "would-kill")), 1);
  auto records = audit_records(cfg);
  ASSERT_EQ(records.size(), 1u) << read_text(cfg.file("audit.jsonl"));
  EXPECT_EQ(records[0]["event"], "decision");
  EXPECT_EQ(records[0]["outcome"], "would-kill");
  EXPECT_EQ(records[0]["enforced"], false);
  EXPECT_EQ(records[0]["process"]["pid"], g.worker);
}

TEST(DaemonPolicies, MinMemoryAndIdleSelectOnlyTheBigIdleProcess) {
  REQUIRE_DOUBLE();
  FakeDevRoot dev;
  Child big_idle = holding(dev, "nvidia0"), small_idle = holding(dev, "nvidia0"),
        big_busy = holding(dev, "nvidia0");
  FakeNvml nvml(policy_scenario(json::array({
      {{"pid", big_idle.pid()}, {"used_bytes", 4 * GiB}, {"sm_util", 0}},
      {{"pid", small_idle.pid()}, {"used_bytes", 100 * (GiB >> 10)}, {"sm_util", 0}},
      {{"pid", big_busy.pid()}, {"used_bytes", 4 * GiB}, {"sm_util", 85}},
  })));
  TempDir cfg;
  auto config = write_policy_config(cfg, R"(enforce = true
[[policy]]
name = "idle-hogs"
min_memory = "1GiB"
idle = "2s"
idle_below = 5
action = "kill"
)");
  DaemonProcess d({"--config", config, "--dev-root", dev.path()}, nvml.env());
  ASSERT_GT(d.port(), 0) << d.log();
  ASSERT_EQ(end_signal(big_idle.pid()), SIGKILL) << d.log();
  ASSERT_TRUE(wait_until([&] { return d.metric(series("idle-hogs", "kill", "released")) == 1; }))
      << d.log();
  EXPECT_TRUE(is_alive(small_idle.pid()));
  EXPECT_TRUE(is_alive(big_busy.pid()));
  EXPECT_TRUE(wait_until([&] {
    return d.metric("gpureap_policy_matching_processes{policy=\"idle-hogs\"} ") == 0;
  })) << d.log();
}

TEST(DaemonPolicies, AProtectedProcessIsNeverActedOn) {
  REQUIRE_DOUBLE();
  FakeDevRoot dev;
  if (::geteuid() != 0) GTEST_SKIP() << "a system-installed program needs root to install";
  auto program = run_system_program(dev, "nvidia0", "Xorg");
  const Child& xorg = *program->child;
  Child job = holding(dev, "nvidia0");
  FakeNvml nvml(policy_scenario(json::array(
      {{{"pid", xorg.pid()}, {"used_bytes", GiB}}, {{"pid", job.pid()}, {"used_bytes", GiB}}})));
  TempDir cfg;
  auto config = write_policy_config(cfg, R"(enforce = true
[[policy]]
name = "everything-big"
min_memory = "512MiB"
action = "kill"
)");
  DaemonProcess d({"--config", config, "--dev-root", dev.path()}, nvml.env());
  ASSERT_GT(d.port(), 0) << d.log();
  ASSERT_EQ(end_signal(job.pid()), SIGKILL) << d.log();
  ASSERT_TRUE(wait_until([&] {
    return d.metric(series("everything-big", "kill", "released")) == 1;
  })) << d.log();
  ASSERT_TRUE(wait_new_samples(d, 5)) << d.log();
  EXPECT_TRUE(is_alive(xorg.pid()));
  EXPECT_EQ(d.log().find("PID " + std::to_string(xorg.pid())), std::string::npos) << d.log();
  for (const auto& record : audit_records(cfg)) EXPECT_NE(record["process"]["pid"], xorg.pid());
}

TEST(DaemonPolicies, AnActionRaisesAPolicyActionAlert) {
  REQUIRE_DOUBLE();
  GhostHolder g;
  TempDir cfg;
  std::ofstream(cfg.file("page.sh")) << "cat >> \"$1\"\necho >> \"$1\"\n";
  auto config = write_policy_config(cfg, R"(enforce = true
[[policy]]
name = "ghosts"
anomalies = ["inherited-holder"]
action = "kill"

[[alert]]
name = "PolicyActed"
condition = "policy_action"
policy = "ghosts"

[[sink]]
name = "pager"
type = "exec"
command = ["/bin/sh", ")" + cfg.file("page.sh") +
                                             "\", \"" + cfg.file("pages.jsonl") + R"("]
)");
  DaemonProcess d({"--config", config, "--dev-root", g.dev.path()}, g.nvml->env());
  ASSERT_GT(d.port(), 0) << d.log();
  ASSERT_TRUE(wait_until([&] { return !read_json_lines(cfg.file("pages.jsonl")).empty(); }))
      << d.log();
  // The decision to kill is not final; the action's result is the one alert.
  json page = read_json_lines(cfg.file("pages.jsonl"))[0];
  EXPECT_EQ(page["status"], "firing") << page.dump(2);
  ASSERT_EQ(page["alerts"].size(), 1u) << page.dump(2);
  const json& labels = page["alerts"][0]["labels"];
  EXPECT_EQ(labels["alertname"], "PolicyActed");
  EXPECT_EQ(labels["policy"], "ghosts");
  EXPECT_EQ(labels["action"], "kill");
  EXPECT_EQ(labels["outcome"], "released");
  EXPECT_EQ(labels["pid"], std::to_string(g.worker));
}

TEST(PolicyTest, ShowsWhatEachPolicyMatchesNowAndWhy) {
  REQUIRE_DOUBLE();
  GhostHolder g;
  // It holds another GPU, one the driver lists nothing on: nothing makes it suspect.
  Child other = holding(g.dev, "nvidia1");
  TempDir cfg;
  auto config = write_policy_config(cfg, R"(
[[policy]]
name = "ghosts"
anomalies = ["inherited-holder", "orphan"]
after = "10m"
action = "terminate"
)");
  auto r =
      run_gpureap({"policy", "test", "--config", config, "--dev-root", g.dev.path(), "--no-color"},
                  g.nvml->env());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("enforce is off"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("policy ghosts (line 5): would terminate"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("once the match has held for 10m00s"), std::string::npos) << r.out;
  auto rows = rows_of(r.out, g.worker);
  ASSERT_EQ(rows.size(), 1u) << r.out;
  EXPECT_NE(rows[0].find("inherited-holder"), std::string::npos) << r.out;
  EXPECT_NE(rows[0].find("6.0 GiB"), std::string::npos) << "the memory it keeps alive: " << r.out;
  EXPECT_NE(r.out.find("not matched: " + std::to_string(other.pid())), std::string::npos) << r.out;

  auto j = run_json({"--json", "policy", "test", "--config", config, "--dev-root", g.dev.path()},
                    g.nvml->env());
  EXPECT_EQ(j["schema"], "gpureap.policy-test/v1");
  ASSERT_EQ(j["policies"].size(), 1u);
  auto worker = entry_of(j["policies"][0]["processes"], g.worker);
  EXPECT_EQ(worker["status"], "matches") << j.dump(2);
  auto o = entry_of(j["policies"][0]["processes"], other.pid());
  EXPECT_EQ(o["status"], "no-match") << j.dump(2);
}

// At 80 columns nothing runs past the edge: the prose wraps and the table fits; narrower, WHY
// (wider than what is left) goes to a line under its row. A listen port of 0 is not offered to
// curl.
TEST(PolicyTest, ItsProseWrapsAndWhyGoesUnderTheRowWhereItDoesNotFit) {
  REQUIRE_DOUBLE();
  GhostHolder g;
  TempDir cfg;
  auto config = write_policy_config(cfg, R"(listen = "127.0.0.1:0"
[[policy]]
name = "keepers-of-a-gone-trainer-on-any-gpu"
anomalies = ["inherited-holder", "orphan"]
after = "10m"
action = "terminate"
)");
  for (size_t width : {80u, 50u}) {
    auto env = g.nvml->env();
    env.push_back("COLUMNS=" + std::to_string(width));
    auto r = run_gpureap(
        {"policy", "test", "--config", config, "--dev-root", g.dev.path(), "--no-color"}, env);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const auto lines = lines_of(r.out);
    for (const auto& line : lines) EXPECT_LE(line.size(), width) << line << "\n" << r.out;
    // Wrapped, not cut: the lines joined again read the whole sentence.
    std::string joined;
    for (const auto& line : lines) joined += line + " ";
    EXPECT_NE(joined.find("policy keepers-of-a-gone-trainer-on-any-gpu (line 5): would terminate "
                          "(SIGTERM, SIGKILL after 10s) once the match has held for 10m00s"),
              std::string::npos)
        << r.out;
    auto rows = rows_of(r.out, g.worker);
    ASSERT_EQ(rows.size(), 1u) << r.out;
    const auto row = std::find(lines.begin(), lines.end(), rows[0]);
    ASSERT_NE(row, lines.end());
    ASSERT_NE(row + 1, lines.end()) << r.out;
    const auto why = row[1].find_first_not_of(' ');  // under the second column
    ASSERT_NE(why, std::string::npos) << r.out;
    if (width == 80) {
      EXPECT_NE(rows[0].find("inherited-holder"), std::string::npos) << r.out;
      EXPECT_EQ(row[1].substr(why, 13), "not matched: ") << r.out;
    } else {
      EXPECT_EQ(rows[0].find("inherited-holder"), std::string::npos) << r.out;
      EXPECT_EQ(row[1].substr(why), "why: inherited-holder") << r.out;
    }
    EXPECT_EQ(r.out.find("curl"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("/api/v1/policies"), std::string::npos) << r.out;
  }
}

TEST(PolicyTest, AnInvalidConfigIsRefusedWithItsLines) {
  TempDir cfg;
  auto config = write_policy_config(cfg, "[[policy]]\nname = \"x\"\nanomalies = [\"zombie\"]\n");
  auto r = run_gpureap({"policy", "test", "--config", config, "--nvml-library", kNoNvml});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("config.toml:6:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("unknown anomaly \"zombie\""), std::string::npos) << r.err;
}

TEST(DaemonPolicies, ADriverThatWedgesWhileAnActionWaitsForTheMemoryDoesNotHoldUpTheStop) {
  REQUIRE_DOUBLE();
  FakeDevRoot dev;
  Child job = holding(dev, "nvidia0");
  // Its memory stays listed long after it dies: the action keeps polling the driver.
  json world = policy_scenario(
      json::array({{{"pid", job.pid()}, {"used_bytes", 2 * GiB}, {"release_delay_ms", 600000}}}));
  FakeNvml nvml(world);
  TempDir cfg;
  auto config = write_policy_config(cfg, R"(enforce = true
driver_timeout = "500ms"
[[policy]]
name = "big"
min_memory = "1GiB"
action = "kill"
)");
  DaemonProcess d({"--config", config, "--dev-root", dev.path()}, nvml.env());
  ASSERT_GT(d.port(), 0) << d.log();
  ASSERT_EQ(end_signal(job.pid()), SIGKILL) << d.log();
  json wedged = world;
  wedged["block_call"] = "nvmlDeviceGetMemoryInfo";
  nvml.write(wedged);
  ASSERT_TRUE(wait_until([&] { return d.metric("gpureap_up ") == 0; })) << d.log();
  d.signal(SIGTERM);
  EXPECT_EQ(d.wait_exit(15000), 0) << d.log();
}

TEST(DaemonPolicies, CheckConfigNamesEveryPolicyProblemWithItsLine) {
  TempDir cfg;
  auto config = write_policy_config(cfg, R"([[policy]]
name = "p"
anomalies = ["orphan", "zombie"]
after = "five minutes"
user = "alice"
uid = 1000
action = "terminate"
)");
  auto r = run_gpureap({"daemon", "--check-config", config});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("config.toml:6:13: anomalies: unknown anomaly \"zombie\""),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("config.toml:7:9: after:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("config.toml:9:7: policy \"p\": give user or uid, not both"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace gpureap::testing

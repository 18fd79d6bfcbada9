// What makes a real PyTorch job (gloo, CPU) stalled: the kernel's word that one of its ranks
// ended, never an exited child of its launcher alone. A zombie keeps its PID, start time, uid and
// group, but not the environment and the files that made it a rank: a helper the launcher ran
// (nvidia-smi, a short script) and has not reaped looks the same. A healthy job whose last rank
// has yet to start, with such helpers, paused, and beside another user who tries to look like a
// part of it, is never called stalled, marked or planned.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "pytorch_job.h"
#include "support.h"

namespace gpureap::testing {
namespace {
namespace stalled_evidence {

bool names_any(const nlohmann::json& finding, const std::set<pid_t>& pids) {
  for (const auto& p : finding["pids"])
    if (pids.count(p.get<pid_t>())) return true;
  return false;
}

// The codes of the findings that name any of `pids`, in the order doctor gave them.
std::vector<std::string> codes_naming(const nlohmann::json& doctor, const std::set<pid_t>& pids) {
  std::vector<std::string> out;
  for (const auto& f : doctor["findings"])
    if (names_any(f, pids)) out.push_back(f["code"]);
  return out;
}

// The live ranks the daemon counts for the job of `launcher` (gpureap_job_ranks), or -1.
double live_ranks(const DaemonProcess& d, pid_t launcher) {
  const std::string body = d.get("/metrics").body;
  const std::string series = "gpureap_job_ranks{launcher_pid=\"" + std::to_string(launcher) + "\"";
  for (size_t at = body.find(series); at != std::string::npos; at = body.find(series, at + 1)) {
    const size_t end = body.find('\n', at);
    const std::string line = body.substr(at, end - at);
    if (line.find("state=\"live\"}") != std::string::npos)
      return std::stod(line.substr(line.rfind(' ') + 1));
  }
  return -1;
}

nlohmann::json daemon_findings(const DaemonProcess& d) {
  auto r = d.get("/api/v1/findings");
  auto doc = nlohmann::json::parse(r.body, nullptr, false);
  if (!doc.is_object()) return nlohmann::json{{"status", r.status}, {"body", r.body}};
  return doc;
}

std::optional<long> policy_matching(const DaemonProcess& d) {
  auto doc = nlohmann::json::parse(d.get("/api/v1/policies").body, nullptr, false);
  if (!doc.is_object() || !doc["policies"].is_array() || doc["policies"].empty())
    return std::nullopt;
  return doc["policies"][0]["matching"].get<long>();
}

std::string daemon_config(const TempDir& cfg) {
  std::ofstream(cfg.file("config.toml"))
      << "interval = \"200ms\"\nholder_scan_interval = \"200ms\"\n"
      << "audit_log = \"" << cfg.file("audit.jsonl") << "\"\n"
      << "[[policy]]\nname = \"hung\"\nanomalies = [\"stalled-job\"]\nafter = \"1h\"\n";
  return cfg.file("config.toml");
}

}  // namespace stalled_evidence

// A job of four ranks started rank by rank: ranks 0-2 run and wait in the gloo group's set-up for
// rank 3, which its launcher starts once its data is ready. Meanwhile the launcher ran two helpers
// it never reaps: one that exited at once, and one that held a GPU's device file as nvidia-smi
// does (the daemon watched it as an unlabelled child that opened the GPU) and then exited. Rank 3
// is missing and the launcher has exited children: neither the daemon (its findings, its
// `stalled-job` policy), nor doctor, nor ps calls the job stalled, and doctor --fix plans
// nothing, while it runs, and while the whole job is paused (SIGSTOP). Doctor says what it cannot
// tell (unreaped-zombies, about the launcher alone). Then rank 3 starts and the job runs whole.
TEST(StalledJobEvidence, ALaunchersUnreapedHelpersNeverMakeAHealthyJobStalled) {
  REQUIRE_DOUBLE();
  if (auto why = why_no_pytorch(); !why.empty()) GTEST_SKIP() << why;
  FakeDevRoot dev;
  for (const char* name : {"nvidia2", "nvidia3"}) std::ofstream(dev.dev(name)) << "stand-in\n";
  TempDir dir;
  const std::string gate = dir.file("data-ready");
  const std::string helper_gate = dir.file("helper-done");
  const std::string per_rank = dev.dev("nvidia") + "{}";
  PythonJob job({pytorch_script("helper_launcher.py"), "4", std::to_string(free_port()), gate,
                 dev.dev("nvidia0"), helper_gate, kPython, pytorch_script("gloo_rank.py"),
                 per_rank});
  KillStrays strays;
  const auto launched = job.numbers_after("ranks");
  std::vector<pid_t> ranks(launched.begin(), launched.end());
  strays.pids.insert(strays.pids.end(), ranks.begin(), ranks.end());
  ASSERT_EQ(ranks.size(), 3u) << "the launcher did not start its ranks";
  const auto quick = job.numbers_after("quick");
  const auto helper = job.numbers_after("helper");
  ASSERT_EQ(quick.size(), 1u) << "the launcher did not run its helpers";
  ASSERT_EQ(helper.size(), 1u) << "the launcher did not run its helpers";
  const auto smi = static_cast<pid_t>(helper[0]);
  strays.pids.push_back(smi);
  for (size_t i = 0; i < ranks.size(); ++i)
    ASSERT_TRUE(wait_until([&] { return holds_file(ranks[i], per_rank, i); }, 120000))
        << "rank " << i << " did not open its GPU";
  const pid_t launcher = job.pid();
  std::vector<nlohmann::json> gpus;
  for (int i = 0; i < 3; ++i)
    gpus.push_back(
        nvml_gpu(i, {{{"pid", ranks[static_cast<size_t>(i)]}, {"used_bytes", 16 * GiB}}}));
  FakeNvml nvml(nlohmann::json{{"gpus", gpus}});
  TempDir cfg;
  DaemonProcess d({"--config", stalled_evidence::daemon_config(cfg), "--dev-root", dev.path()},
                  nvml.env());
  ASSERT_GT(d.port(), 0) << d.log();
  // The daemon sees the helper that holds a GPU file as one more child that opened the GPU.
  ASSERT_TRUE(wait_until([&] { return stalled_evidence::live_ranks(d, launcher) == 4; }, 30000))
      << d.get("/metrics").body;

  std::ofstream(helper_gate) << "done\n";
  ASSERT_TRUE(wait_for_state(smi, 'Z', 60000)) << "the helper did not exit";
  ASSERT_EQ(state_of(static_cast<pid_t>(quick[0])), 'Z');
  // The daemon saw the helper end, and its two samples show both helpers unreaped.
  ASSERT_TRUE(wait_until([&] { return stalled_evidence::live_ranks(d, launcher) == 3; }, 30000))
      << d.get("/metrics").body;
  nlohmann::json served;
  ASSERT_TRUE(wait_until(
      [&] {
        served = stalled_evidence::daemon_findings(d);
        for (const auto& f : served["findings"])
          if (f["code"] == "unreaped-zombies" && f["pids"] == nlohmann::json::array({launcher}))
            return true;
        return false;
      },
      30000))
      << served.dump(2) << d.log();
  const std::set<pid_t> job_side{launcher, ranks[0], ranks[1],
                                 ranks[2], smi,      static_cast<pid_t>(quick[0])};
  EXPECT_EQ(stalled_evidence::codes_naming(served, job_side),
            std::vector<std::string>{"unreaped-zombies"})
      << served.dump(2);
  EXPECT_EQ(stalled_evidence::policy_matching(d), 0);

  auto one_look = [&](const std::set<std::string>& expected_codes) {
    auto doc = parse_output(run_gpureap(
        {"doctor", "--json", "--no-daemon", "--dev-root", dev.path(), "--settle", "300ms"},
        nvml.env()));
    const auto codes = stalled_evidence::codes_naming(doc, job_side);
    EXPECT_EQ(std::set<std::string>(codes.begin(), codes.end()), expected_codes)
        << doc["findings"].dump(2);
    EXPECT_EQ(std::count(codes.begin(), codes.end(), "unreaped-zombies"), 1)
        << doc["findings"].dump(2);
    for (const auto& f : doc["findings"]) {
      if (f["code"] != "unreaped-zombies") continue;
      EXPECT_EQ(f["pids"], nlohmann::json::array({launcher})) << f.dump(2);
      EXPECT_NE(f["summary"].get<std::string>().find("does not reap its exited children"),
                std::string::npos)
          << f.dump(2);
      EXPECT_NE(f["summary"].get<std::string>().find("rank 3 of the job is missing"),
                std::string::npos)
          << f.dump(2);
    }
    auto ps = parse_output(run_gpureap({"ps", "--json", "--dev-root", dev.path()}, nvml.env()));
    for (const auto& row : ps["processes"]) {
      EXPECT_EQ(row["anomalies"].dump().find("stalled-job"), std::string::npos) << row.dump(2);
    }
    auto plan = run_gpureap({"doctor", "--fix", "--no-daemon", "--dev-root", dev.path(), "--settle",
                             "0s", "--no-color"},
                            nvml.env());
    EXPECT_EQ(plan_rows(plan.err), std::set<pid_t>{}) << plan.err;
  };
  one_look({"unreaped-zombies"});

  // Paused whole (Ctrl-Z on its group): the ranks are stopped holders, and that is all.
  ASSERT_EQ(::kill(-launcher, SIGSTOP), 0);
  for (pid_t p : {launcher, ranks[0], ranks[1], ranks[2]})
    ASSERT_TRUE(wait_for_state(p, 'T', 30000)) << p;
  one_look({"stopped-holder", "unreaped-zombies"});
  EXPECT_EQ(stalled_evidence::policy_matching(d), 0);
  ::kill(-launcher, SIGCONT);

  // Nothing was ended: rank 3 starts and the job runs whole.
  std::ofstream(gate) << "go\n";
  const auto started = job.numbers_after("started");
  ASSERT_EQ(started.size(), 1u) << "the launcher did not start rank 3";
  strays.pids.push_back(static_cast<pid_t>(started[0]));
  EXPECT_EQ(pids_after(job, "ready", 4).size(), 4u) << "the job did not run";
  for (pid_t p : {launcher, ranks[0], ranks[1], ranks[2]}) EXPECT_TRUE(is_alive(p)) << p;
  EXPECT_EQ(stalled_evidence::policy_matching(d), 0);
  for (const auto& f : stalled_evidence::daemon_findings(d)["findings"]) {
    EXPECT_NE(f["code"], "stalled-job") << f.dump(2);
  }
}

}  // namespace
}  // namespace gpureap::testing

// A MIG GPU's instances through every other view: `ps` and `doctor --gpu N/G` (by their own scan,
// through the daemon, and through a daemon that predates instances), `ps --watch`, `reset`'s
// refusal, kill's plan rows and `top`'s header.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "mig_scene.h"
#include "support.h"

namespace gpureap::testing {
namespace {

using nlohmann::json;

// MIG GPU 0 split into GPU instances 3 and 5: trainer on 3 is gone and its forked worker keeps
// its context; a job runs on 5.
struct MigViews {
  FakeDevRoot dev;
  std::unique_ptr<GoneTrainer> ghost = gone_trainer(dev, "nvidia0");
  Child job = holding(dev, "nvidia0");
  FakeNvml nvml{scenario()};

  json scenario() const { return mig_scenario(*ghost, job.pid(), 10 * GiB); }

  RunResult run(std::vector<std::string> args) const {
    args.insert(args.end(), {"--dev-root", dev.path()});
    return run_gpureap(args, nvml.env());
  }
};

std::vector<pid_t> row_pids(const json& doc) {
  std::vector<pid_t> out;
  for (const auto& p : doc["processes"]) out.push_back(p["pid"].get<pid_t>());
  return out;
}

// What the shells complete after --gpu: the instances for ps, kill and doctor, whole GPUs
// alone for reset.
TEST(MigViews, CompletionListsTheInstancesWhereAnOptionTakesThem) {
  REQUIRE_DOUBLE();
  MigViews m;
  auto places = m.run({"list", "gpu-places"});
  ASSERT_EQ(places.exit_code, 0) << places.err;
  EXPECT_EQ(lines_of(places.out),
            (std::vector<std::string>{"0\tNVIDIA H100 80GB HBM3", "0/3\tMIG 3g.40gb",
                                      "0/5\tMIG 1g.10gb"}));
  auto gpus = m.run({"list", "gpus"});
  ASSERT_EQ(gpus.exit_code, 0) << gpus.err;
  EXPECT_EQ(lines_of(gpus.out), (std::vector<std::string>{"0\tNVIDIA H100 80GB HBM3"}));
}

TEST(MigViews, PsGpuInstanceNarrowsTheRowsButNeverTheGpusFigures) {
  REQUIRE_DOUBLE();
  MigViews m;
  auto whole = parse_output(m.run({"ps", "--json", "--no-daemon"}));
  ASSERT_EQ(whole["gpus"].size(), 1u) << whole.dump();
  struct Case {
    std::string gpu;
    std::vector<pid_t> rows;
    std::vector<std::string> instances;
  };
  for (const auto& c : std::vector<Case>{
           {"0/3", sorted({m.ghost->trainer, m.ghost->worker}), {"0/3"}},
           {kMigUuid3, sorted({m.ghost->trainer, m.ghost->worker}), {"0/3"}},
           {"0/5", {m.job.pid()}, {"0/5"}},
       }) {
    auto r = m.run({"ps", "--json", "--no-daemon", "--gpu", c.gpu});
    ASSERT_EQ(r.exit_code, 0) << c.gpu << r.err;
    auto doc = parse_output(r);
    EXPECT_EQ(sorted(row_pids(doc)), c.rows) << c.gpu << doc.dump(1);
    ASSERT_EQ(doc["gpus"].size(), 1u) << c.gpu;
    // The GPU's own figures are the whole GPU's, whichever instance's rows are shown.
    EXPECT_EQ(doc["gpus"][0]["memory"], whole["gpus"][0]["memory"]) << c.gpu;
    std::vector<std::string> instances;
    for (const auto& i : doc["gpus"][0]["instances"]) instances.push_back(i["instance"]);
    EXPECT_EQ(instances, c.instances) << c.gpu;
  }
  // The table says the same: the worker's row on 0/3, not the job's.
  auto table = m.run({"ps", "--no-color", "--no-daemon", "--gpu", "0/3"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find(std::to_string(m.ghost->worker)), std::string::npos) << table.out;
  EXPECT_EQ(table.out.find(std::to_string(m.job.pid())), std::string::npos) << table.out;
  EXPECT_EQ(table.out.find("0/5"), std::string::npos) << table.out;

  auto missing = m.run({"ps", "--no-daemon", "--gpu", "0/4"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("GPU 0 has no GPU instance 4 (its instances: 3, 5"), std::string::npos)
      << missing.err;
  auto typo = m.run({"ps", "--no-daemon", "--gpu", "0/x"});
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_NE(typo.err.find("--gpu 0/x names no GPU"), std::string::npos) << typo.err;
}

TEST(MigViews, PsWatchNarrowsToTheInstanceToo) {
  REQUIRE_DOUBLE();
  MigViews m;
  BackgroundGpureap watch(
      {"ps", "--watch", "100ms", "--json", "--gpu", "0/5", "--dev-root", m.dev.path()},
      m.nvml.env());
  std::string text;
  ASSERT_TRUE(wait_until([&] {
    text = read_text("/proc/" + std::to_string(watch.pid()) + "/fd/1");
    return text.find('\n') != std::string::npos;
  })) << text;
  ::kill(watch.pid(), SIGINT);
  auto r = watch.wait();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto doc = json::parse(r.out.substr(0, r.out.find('\n')));
  EXPECT_EQ(row_pids(doc), std::vector<pid_t>{m.job.pid()}) << doc.dump(1);
}

TEST(MigViews, DoctorGpuInstanceKeepsOnlyThatInstancesFindings) {
  REQUIRE_DOUBLE();
  MigViews m;
  const std::string ghost = "held by gone PID " + std::to_string(m.ghost->trainer);
  auto on3 = m.run({"doctor", "--no-color", "--no-daemon", "--settle", "0s", "--gpu", "0/3"});
  EXPECT_NE(on3.out.find(ghost), std::string::npos) << on3.out << on3.err;
  auto by_uuid = m.run({"doctor", "--json", "--no-daemon", "--settle", "0s", "--gpu", kMigUuid3});
  bool found = false;
  const auto uuid_doc = parse_output(by_uuid);
  for (const auto& f : uuid_doc["findings"]) found |= f["code"] == "no-such-process";
  EXPECT_TRUE(found) << by_uuid.out;
  auto on5 = m.run({"doctor", "--no-color", "--no-daemon", "--settle", "0s", "--gpu", "0/5"});
  EXPECT_EQ(on5.out.find(ghost), std::string::npos) << on5.out;
  EXPECT_EQ(on5.exit_code, 0) << on5.out << on5.err;
  // Healthy, counted in the instance: the job alone, not the ghost's worker on 0/3.
  EXPECT_NE(on5.out.find("Healthy: GPU 0/5, 1 process holding it"), std::string::npos) << on5.out;
  auto missing = m.run({"doctor", "--no-daemon", "--settle", "0s", "--gpu", "0/4"});
  EXPECT_EQ(missing.exit_code, 3) << missing.err;
  EXPECT_NE(missing.err.find("GPU 0 has no GPU instance 4"), std::string::npos) << missing.err;
}

// A daemon serving the local socket: the command narrows the daemon's snapshot to the instance
// as it narrows its own.
TEST(MigViews, TheDaemonNarrowsPsAndDoctorToTheInstance) {
  REQUIRE_DOUBLE();
  MigViews m;
  TempDir run;
  const std::string socket = run.file("gpureap.sock");
  std::string config = run.file("config.toml");
  std::ofstream(config) << "interval = \"250ms\"\nlocal_socket = \"" << socket << "\"\n";
  DaemonProcess d({"--config", config, "--dev-root", m.dev.path()}, m.nvml.env());
  ASSERT_TRUE(d.wait_log(kServingLocalSocket + socket)) << d.log();
  const std::vector<std::string> client{"GPUREAP_DAEMON_SOCKET=" + socket};
  auto ps = run_gpureap({"ps", "--json", "--gpu", "0/5"}, client);
  ASSERT_EQ(ps.exit_code, 0) << ps.err;
  auto doc = parse_output(ps);
  EXPECT_EQ(doc["source"]["kind"], "daemon") << doc["source"];
  EXPECT_EQ(row_pids(doc), std::vector<pid_t>{m.job.pid()}) << doc.dump(1);

  auto on5 = run_gpureap({"doctor", "--json", "--settle", "0s", "--gpu", "0/5"}, client);
  auto d5 = parse_output(on5);
  EXPECT_EQ(d5["source"]["kind"], "daemon") << on5.out << on5.err;
  for (const auto& f : d5["findings"]) EXPECT_NE(f["code"], "no-such-process") << f.dump();
  auto on3 = run_gpureap({"doctor", "--json", "--settle", "0s", "--gpu", kMigUuid3}, client);
  bool found = false;
  const auto d3 = parse_output(on3);
  for (const auto& f : d3["findings"]) found |= f["code"] == "no-such-process";
  EXPECT_TRUE(found) << on3.out << on3.err;

  // The report's Now box: the GPU's instances, by place, with what they are.
  auto history = d.get("/api/v1/history?since=1m");
  ASSERT_EQ(history.status, 200) << history.body;
  const auto now = json::parse(history.body)["incident"]["now"]["gpus"][0];
  ASSERT_TRUE(now.contains("instances")) << now.dump(1);
  std::vector<std::string> places;
  for (const auto& i : now["instances"]) places.push_back(i["instance"]);
  EXPECT_EQ(places, (std::vector<std::string>{"0/3", "0/5"})) << now.dump(1);
  EXPECT_EQ(now["instances"][0]["label"], "MIG 3g.40gb") << now.dump(1);
}

TEST(MigViews, AnOldDaemonNeverAnswersForTheWholeGpu) {
  REQUIRE_DOUBLE();
  MigViews m;
  TempDir run;
  // A daemon older than the evidence it is asked for, which would render ps itself for the
  // whole GPU (it refuses the instance fields it does not know).
  ScriptedSocket old(run.file("old.sock"), [](const std::string& line) -> std::string {
    if (line.find("\"gpu_place") != std::string::npos)
      return R"({"ok":false,"error":"bad request: unknown field \"gpu_places\""})";
    return R"({"ok":true,"output":"ANSWERED BY THE OLD DAEMON\n","warnings":[],)"
           R"("snapshot_age_ms":5,"exit_code":0})";
  });
  std::vector<std::string> env = m.nvml.env();
  env.push_back("GPUREAP_DAEMON_SOCKET=" + run.file("old.sock"));
  // Its text never reaches the screen: the command says why and narrows on its own scan.
  auto plain = run_gpureap({"ps", "--gpu", "0"}, env);
  EXPECT_EQ(plain.out.find("OLD DAEMON"), std::string::npos) << plain.out;
  EXPECT_NE(plain.err.find("runs another gpureap version"), std::string::npos) << plain.err;
  auto narrowed = run_gpureap({"ps", "--json", "--gpu", "0/5"}, env);
  ASSERT_EQ(narrowed.exit_code, 0) << narrowed.err;
  auto doc = parse_output(narrowed);
  EXPECT_EQ(doc["source"]["kind"], "scan");
  EXPECT_EQ(row_pids(doc), std::vector<pid_t>{m.job.pid()}) << doc.dump(1);
  auto doctor = run_gpureap({"doctor", "--settle", "0s", "--gpu", "0/5"}, env);
  EXPECT_EQ(doctor.out.find("OLD DAEMON"), std::string::npos) << doctor.out;
  // Nothing of the selection travels: the command narrows whatever it is given itself.
  auto requests = old.requests();
  ASSERT_EQ(requests.size(), 3u);
  for (const auto& r : requests) {
    EXPECT_NE(r.find(R"("command":"evidence")"), std::string::npos) << r;
    EXPECT_EQ(r.find("gpu_place"), std::string::npos) << r;
  }
}

TEST(MigViews, ResetSaysEveryInstancesWorkEndsAndSignalsNothing) {
  REQUIRE_DOUBLE();
  MigViews m;
  auto r = m.run({"reset", "--gpu", "0", "--dry-run"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  // Before the refusal: what the reset would end, instance by instance, with whose work it is.
  const auto mig = r.err.find(
      "gpureap: GPU 0 is split into MIG instances: a reset ends the work on every "
      "instance:");
  const auto refusal = r.err.find("refusing to reset GPU 0");
  ASSERT_NE(mig, std::string::npos) << r.err;
  ASSERT_NE(refusal, std::string::npos) << r.err;
  EXPECT_LT(mig, refusal);
  EXPECT_NE(r.err.find("  0/3 (MIG 3g.40gb): "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("'s PID " + std::to_string(m.ghost->worker) + " ("), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("  0/5 (MIG 1g.10gb): "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("'s PID " + std::to_string(m.job.pid()) + " ("), std::string::npos) << r.err;
  // The refusal names the blockers under their instances, in order.
  const auto on3 =
      r.err.find("  on 0/3 (MIG 3g.40gb):\n    PID " + std::to_string(m.ghost->worker));
  const auto on5 = r.err.find("  on 0/5 (MIG 1g.10gb):\n    PID " + std::to_string(m.job.pid()));
  EXPECT_NE(on3, std::string::npos) << r.err;
  EXPECT_NE(on5, std::string::npos) << r.err;
  EXPECT_TRUE(is_alive(m.ghost->worker));
  EXPECT_TRUE(is_alive(m.job.pid()));
  EXPECT_TRUE(no_signal_pending(m.ghost->worker));
  EXPECT_TRUE(no_signal_pending(m.job.pid()));
}

TEST(MigViews, KillsPlanRowsSayTheInstance) {
  REQUIRE_DOUBLE();
  MigViews m;
  auto text = m.run({"kill", "--dry-run", "--no-color", "--gpu", "0/5"});
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("listed on GPU 0/5"), std::string::npos) << text.out;
  auto whole = m.run({"kill", "--dry-run", "--json", "--gpu", "0"});
  auto doc = parse_output(whole);
  bool listed = false;
  for (const auto& t : doc["plan"]["targets"])
    if (t["pid"] == m.job.pid())
      for (const auto& reason : t["reasons"])
        if (reason["kind"] == "listed-on-gpu") {
          listed = true;
          EXPECT_EQ(reason["instance"], "0/5") << reason.dump();
          EXPECT_EQ(reason["text"], "listed on GPU 0/5") << reason.dump();
        }
  EXPECT_TRUE(listed) << whole.out;
  EXPECT_TRUE(is_alive(m.job.pid()));
}

TEST(MigViews, TopShowsTheInstancesUnderTheGpuAt80x24) {
  REQUIRE_DOUBLE();
  REQUIRE_TERMINAL();
  MigViews m;
  TmuxGpureap top({"top", "--dev-root", m.dev.path()}, m.nvml.env(), 80, 24);
  auto screen = top.wait_until(
      [&](const std::string& s) { return !rows_of(s, m.job.pid()).empty(); }, "the job's row");
  std::istringstream lines(screen);
  std::vector<std::string> all;
  for (std::string l; std::getline(lines, l);) all.push_back(l);
  size_t gpu = all.size(), i3 = all.size(), i5 = all.size();
  for (size_t i = 0; i < all.size(); ++i) {
    if (gpu == all.size() && all[i].rfind("0  ", 0) == 0) gpu = i;
    if (all[i].find("0/3 3g.40gb") != std::string::npos) i3 = i;
    if (all[i].find("0/5 1g.10gb") != std::string::npos) i5 = i;
  }
  ASSERT_LT(gpu, all.size()) << screen;
  EXPECT_EQ(i3, gpu + 1) << screen;
  EXPECT_EQ(i5, gpu + 2) << screen;
  for (const auto& l : all) EXPECT_LE(l.size(), 80u * 4) << l;
  auto job = rows_of(screen, m.job.pid());
  ASSERT_FALSE(job.empty()) << screen;
  EXPECT_NE(job.front().find(" 0/5 "), std::string::npos) << job.front();
  top.keys({"q"});
  EXPECT_EQ(top.exit_code(), 0);
}

}  // namespace
}  // namespace gpureap::testing

// The ghost verdict on real processes: open file descriptions (kcmp) decide who keeps which
// context. A healthy job's forked workers share its open file and are never ghosts, even on a
// GPU where a gone PID is listed; the gone PID's own orphaned worker is its one keeper.
#include <gtest/gtest.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <set>

#include "support.h"

namespace gpureap::testing {
namespace {

using nlohmann::json;

json gpus(json gpu0_processes, uint64_t gpu0_driver_held = 0) {
  return {{"gpus",
           {{{"name", "NVIDIA H200"},
             {"uuid", "GPU-0000"},
             {"minor", 0},
             {"total_bytes", 80 * GiB},
             {"driver_held_bytes", gpu0_driver_held},
             {"processes", gpu0_processes}},
            {{"name", "NVIDIA H200"},
             {"uuid", "GPU-1111"},
             {"minor", 1},
             {"total_bytes", 80 * GiB},
             {"processes", json::array()}}}}};
}

// `gpureap kill --json --dev-root DEV` with the NVML test double (from the environment).
std::vector<std::string> kill_with_driver(const FakeDevRoot& dev, std::vector<std::string> extra) {
  std::vector<std::string> a{"kill", "--json", "--dev-root", dev.path()};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// A command's JSON output, whatever its exit status (doctor and kill say what they found in it).
json output_of(const std::vector<std::string>& args, const std::vector<std::string>& env) {
  return parse_output(run_gpureap(args, env));
}

// The open-file ids of a row's holds of `path`.
std::set<std::string> open_files(const json& row, const std::string& path) {
  std::set<std::string> out;
  for (const auto& d : row["devices"])
    if (d["path"] == path && d["open_file"].is_string())
      out.insert(d["open_file"].get<std::string>());
  return out;
}

// A job that opened nvidia0 itself and forked `workers` that inherit it; in its own group.
struct Job {
  Ready ready;
  std::unique_ptr<Child> main;
  std::vector<pid_t> workers;
  KillStrays strays;

  Job(const FakeDevRoot& dev, int n) {
    main = std::make_unique<Child>([&, n] {
      ::setpgid(0, 0);
      hold(dev.dev("nvidia0"));
      for (int i = 0; i < n; ++i)
        if (::fork() == 0) {
          ::prctl(PR_SET_NAME, "pt_data_worker");
          ready.send(::getpid());
          for (;;) ::pause();
        }
    });
    for (int i = 0; i < n; ++i) workers.push_back(static_cast<pid_t>(ready.receive()));
    strays.pids = workers;
  }
  pid_t pid() const { return main->pid(); }
};

class GhostVerdict : public ::testing::Test {
 protected:
  FakeDevRoot dev_;
};

TEST_F(GhostVerdict, AHealthyJobsWorkersAreNeverTheGhostOfAnotherProcessOnTheirGpu) {
  REQUIRE_DOUBLE();
  Job job(dev_, 2);
  auto trainer_ghost = gone_trainer(dev_);
  const GoneTrainer& ghost = *trainer_ghost;
  FakeNvml nvml(
      gpus({{{"pid", job.pid()}, {"used_bytes", 20 * GiB}, {"holders", {job.pid()}}},
            {{"pid", ghost.trainer}, {"used_bytes", 8 * GiB}, {"holders", {ghost.worker}}}}));

  auto snap = run_json({"ps", "--json", "--dev-root", dev_.path()}, nvml.env());
  ASSERT_EQ(snap["open_files"], "exact") << snap.dump(2);
  auto gone = row_of(snap, ghost.trainer);
  ASSERT_FALSE(gone.is_null()) << snap.dump(2);
  EXPECT_EQ(strings(gone["anomalies"]), std::vector<std::string>{"no-such-process"});
  EXPECT_EQ(pids(gone["ghost"]["keepers"]), std::vector<pid_t>{ghost.worker});
  EXPECT_TRUE(gone["ghost"]["listed_keepers"].empty());
  EXPECT_EQ(gone["ghost"]["exact"], true);
  EXPECT_EQ(gone["ghost"]["leaked"], false);

  auto keeper = row_of(snap, ghost.worker);
  EXPECT_EQ(pids(keeper["keeps"]), std::vector<pid_t>{ghost.trainer});
  EXPECT_NE(keeper["anomalies"].dump().find("inherited-holder"), std::string::npos)
      << keeper.dump(2);

  auto main = row_of(snap, job.pid());
  auto job_file = open_files(main, dev_.dev("nvidia0"));
  ASSERT_EQ(job_file.size(), 1u) << main.dump(2);
  EXPECT_TRUE(strings(main["anomalies"]).empty());
  for (pid_t w : job.workers) {
    auto wr = row_of(snap, w);
    EXPECT_TRUE(strings(wr["anomalies"]).empty()) << wr.dump(2);
    EXPECT_EQ(pids(wr["shares_context_of"]), std::vector<pid_t>{job.pid()});
    EXPECT_TRUE(wr["keeps"].empty());
    EXPECT_EQ(open_files(wr, dev_.dev("nvidia0")), job_file)
        << "a forked worker shares the job's open file";
  }
  EXPECT_NE(open_files(keeper, dev_.dev("nvidia0")), job_file);

  const auto& memory = snap["gpus"][0]["memory"];
  EXPECT_EQ(memory["attributed_bytes"], 20 * GiB);
  EXPECT_EQ(memory["ghost_bytes"], 8 * GiB);
  EXPECT_EQ(memory["ghost_keepers"], 1);
  EXPECT_EQ(memory["unattributed_bytes"], 0);

  auto text = run_gpureap({"ps", "--dev-root", dev_.path(), "--no-color"}, nvml.env());
  EXPECT_NE(text.out.find(
                "8.0 GiB on GPU 0 is held by ghosts (1 process keeps it alive). `gpureap doctor` "
                "explains; `gpureap kill " +
                std::to_string(ghost.trainer) + "` frees it."),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("attributed 20 GiB · ghost 8.0 GiB"), std::string::npos) << text.out;

  // kill --ghosts plans the keeper and nothing else.
  auto plan = output_of(kill_with_driver(dev_, {"--ghosts", "--dry-run"}), nvml.env());
  std::vector<pid_t> planned;
  for (const auto& t : plan["plan"]["targets"]) planned.push_back(t["pid"].get<pid_t>());
  EXPECT_EQ(planned, std::vector<pid_t>{ghost.worker}) << plan.dump(2);
  ASSERT_EQ(plan["plan"]["gone"].size(), 1u);
  EXPECT_EQ(pids(plan["plan"]["gone"][0]["keepers"]), std::vector<pid_t>{ghost.worker});

  // doctor: the keeper is warned about with the ghost's memory; the workers only at info.
  auto doc =
      output_of({"doctor", "--json", "--dev-root", dev_.path(), "--settle", "100ms"}, nvml.env());
  for (const auto& f : doc["findings"]) {
    auto fp = pids(f["pids"]);
    for (pid_t w : job.workers) {
      if (std::find(fp.begin(), fp.end(), w) != fp.end()) {
        EXPECT_EQ(f["severity"], "info") << f.dump(2);
      }
    }
    if (f["code"] == "no-such-process") {
      EXPECT_EQ(fp, (std::vector<pid_t>{ghost.trainer, ghost.worker})) << f.dump(2);
      EXPECT_EQ(f["memory_bytes"], 8 * GiB);
    }
    if (f["code"] == "inherited-holder") {
      EXPECT_EQ(f["severity"], "info") << "the keeper is a facet of its ghost: " << f.dump(2);
    }
    for (const auto& x : f["facets"])
      if (x["code"] == "inherited-holder" && x["severity"] == "warning") {
        EXPECT_EQ(f["code"], "no-such-process") << f.dump(2);
        EXPECT_EQ(x["pid"], ghost.worker) << f.dump(2);
      }
  }
}

TEST_F(GhostVerdict, APolicyAndTheMetricsSeeOnlyTheKeeper) {
  REQUIRE_DOUBLE();
  Job job(dev_, 2);
  auto trainer_ghost = gone_trainer(dev_);
  const GoneTrainer& ghost = *trainer_ghost;
  FakeNvml nvml(
      gpus({{{"pid", job.pid()}, {"used_bytes", 20 * GiB}, {"holders", {job.pid()}}},
            {{"pid", ghost.trainer}, {"used_bytes", 8 * GiB}, {"holders", {ghost.worker}}}}));
  TempDir cfg;
  std::ofstream(cfg.file("config.toml"))
      << "interval = \"200ms\"\nholder_scan_interval = \"200ms\"\n"
      << "audit_log = \"" << cfg.file("audit.jsonl") << "\"\n"
      << "[[policy]]\nname = \"ghosts\"\nanomalies = [\"inherited-holder\", "
         "\"orphan\"]\nafter = \"10m\"\naction = \"terminate\"\n";
  auto test = run_json(
      {"--json", "policy", "test", "--config", cfg.file("config.toml"), "--dev-root", dev_.path()},
      nvml.env());
  std::vector<pid_t> matching;
  for (const auto& p : test["policies"][0]["processes"])
    if (p["status"] == "matches") matching.push_back(p["pid"].get<pid_t>());
  EXPECT_EQ(matching, std::vector<pid_t>{ghost.worker}) << test.dump(2);

  DaemonProcess d({"--config", cfg.file("config.toml"), "--dev-root", dev_.path()}, nvml.env());
  ASSERT_GT(d.port(), 0) << d.log();
  std::string gpu0 =
      "{gpu=\"0\",uuid=\"GPU-0000\",pci_bus_id=\"00000000:17:00.0\",vendor=\"nvidia\"";
  ASSERT_TRUE(wait_until([&] {
    return d.metric("gpureap_gpu_memory_ghost_bytes" + gpu0 + "} ") == 8.0 * GiB;
  })) << d.get("/metrics").body;
  EXPECT_EQ(d.metric("gpureap_gpu_processes" + gpu0 + ",anomaly=\"inherited-holder\"} "), 1);
  EXPECT_EQ(d.metric("gpureap_findings{code=\"inherited-holder\",severity=\"warning\"} "), 1);
  EXPECT_TRUE(wait_until([&] {
    return d.metric("gpureap_policy_matching_processes{policy=\"ghosts\"} ") == 1;
  })) << d.get("/metrics").body;
}

TEST_F(GhostVerdict, AReparentedWorkerThatSharesALiveListedSiblingsFileIsThatJobs) {
  REQUIRE_DOUBLE();
  // Job A: its launcher opened nvidia0, forked a listed sibling and a worker, and exited: both
  // are reparented and share the launcher's open file. Job B: a second job with its worker.
  Ready ready;
  pid_t sibling = 0, worker = 0;
  {
    Child launcher([&] {
      ::setpgid(0, 0);
      hold(dev_.dev("nvidia0"));
      for (int i = 0; i < 2; ++i)
        if (::fork() == 0) {
          ready.send(::getpid());
          for (;;) ::pause();
        }
      ::_exit(0);
    });
    sibling = static_cast<pid_t>(ready.receive());
    worker = static_cast<pid_t>(ready.receive());
    launcher.kill_and_reap();
  }
  KillStrays strays{{sibling, worker}};
  Job b(dev_, 1);
  FakeNvml nvml(gpus({{{"pid", sibling}, {"used_bytes", 10 * GiB}, {"holders", {sibling}}},
                      {{"pid", b.pid()}, {"used_bytes", 12 * GiB}, {"holders", {b.pid()}}}}));

  auto snap = run_json({"ps", "--json", "--dev-root", dev_.path()}, nvml.env());
  auto wr = row_of(snap, worker);
  EXPECT_EQ(pids(wr["shares_context_of"]), std::vector<pid_t>{sibling}) << wr.dump(2);
  EXPECT_EQ(wr["anomalies"].dump().find("inherited-holder"), std::string::npos) << wr.dump(2);
  EXPECT_EQ(pids(row_of(snap, b.workers[0])["shares_context_of"]), std::vector<pid_t>{b.pid()});
  EXPECT_EQ(snap["gpus"][0]["memory"]["ghost_bytes"], 0);
  EXPECT_EQ(snap["gpus"][0]["memory"]["attributed_bytes"], 22 * GiB);

  auto plan = output_of(kill_with_driver(dev_, {"--ghosts", "--dry-run"}), nvml.env());
  EXPECT_TRUE(plan["plan"]["targets"].empty()) << plan.dump(2);
  auto doc = output_of({"doctor", "--json", "--dev-root", dev_.path()}, nvml.env());
  for (const auto& f : doc["findings"]) EXPECT_EQ(f["severity"], "info") << f.dump(2);
}

TEST_F(GhostVerdict, AListedProcessThatAlsoHoldsItsDeadParentsFileIsOwnerAndKeeper) {
  REQUIRE_DOUBLE();
  // The trainer opened nvidia0 and forked a child that opened nvidia0 again (a context of its
  // own, listed) and exited: the child holds both open files.
  Ready ready;
  pid_t trainer = 0, child = 0;
  {
    Child t([&] {
      ::setpgid(0, 0);
      hold(dev_.dev("nvidia0"));
      if (::fork() == 0) {
        hold(dev_.dev("nvidia0"));
        ready.send(::getpid());
        for (;;) ::pause();
      }
      ::_exit(0);
    });
    trainer = t.pid();
    child = static_cast<pid_t>(ready.receive());
    t.kill_and_reap();
  }
  KillStrays strays{{child}};
  FakeNvml nvml(gpus({{{"pid", trainer}, {"used_bytes", 6 * GiB}, {"holders", {child}}},
                      {{"pid", child}, {"used_bytes", 3 * GiB}, {"holders", {child}}}}));
  auto snap = run_json({"ps", "--json", "--dev-root", dev_.path()}, nvml.env());
  auto cr = row_of(snap, child);
  EXPECT_EQ(open_files(cr, dev_.dev("nvidia0")).size(), 2u) << cr.dump(2);
  EXPECT_EQ(pids(cr["keeps"]), std::vector<pid_t>{trainer});
  EXPECT_EQ(pids(row_of(snap, trainer)["ghost"]["listed_keepers"]), std::vector<pid_t>{child});

  auto doc =
      output_of({"doctor", "--json", "--dev-root", dev_.path(), "--settle", "100ms"}, nvml.env());
  bool said = false;
  for (const auto& f : doc["findings"])
    if (f["code"] == "no-such-process")
      for (const auto& e : f["evidence"])
        said = said || e.get<std::string>().find("context of its own") != std::string::npos;
  EXPECT_TRUE(said) << doc["findings"].dump(2);
  // --ghosts does not end a job the driver lists; naming the gone PID does.
  auto ghosts = output_of(kill_with_driver(dev_, {"--ghosts", "--dry-run"}), nvml.env());
  EXPECT_TRUE(ghosts["plan"]["targets"].empty()) << ghosts.dump(2);
  auto named =
      output_of(kill_with_driver(dev_, {std::to_string(trainer), "--dry-run"}), nvml.env());
  ASSERT_EQ(named["plan"]["targets"].size(), 1u) << named.dump(2);
  EXPECT_EQ(named["plan"]["targets"][0]["pid"], child);
}

TEST_F(GhostVerdict, ALeakIsToldAndDoesNotBlockTheReset) {
  REQUIRE_DOUBLE();
  if (::geteuid() != 0)
    GTEST_SKIP() << "a leak is only told from a complete view, and a reset needs root";
  pid_t gone = dead_pid();
  FakeNvml nvml(gpus({{{"pid", gone}, {"used_bytes", 4 * GiB}, {"leaked", true}}}));
  FakeNvidiaSmi bin;
  auto env = nvml.env();
  env.push_back(bin.path_env());

  auto snap = run_json({"ps", "--json", "--dev-root", dev_.path()}, env);
  EXPECT_EQ(row_of(snap, gone)["ghost"]["leaked"], true);
  EXPECT_EQ(snap["gpus"][0]["memory"]["leaked_bytes"], 4 * GiB);
  auto text = run_gpureap({"ps", "--dev-root", dev_.path(), "--no-color"}, env);
  EXPECT_NE(text.out.find("4.0 GiB on GPU 0 is leaked"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("`gpureap reset --gpu 0`"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("gpureap kill"), std::string::npos)
      << "killing frees nothing here: " << text.out;

  auto doc = output_of({"doctor", "--json", "--dev-root", dev_.path(), "--settle", "100ms"}, env);
  bool reset_named = false;
  for (const auto& f : doc["findings"])
    if (f["code"] == "leaked-memory")
      for (const auto& step : f["steps"])
        reset_named = reset_named || step["command"] == "gpureap reset --gpu 0";
  EXPECT_TRUE(reset_named) << doc["findings"].dump(2);

  auto r = run_gpureap({"reset", "--gpu", "0", "--yes", "--dev-root", dev_.path()}, env);
  EXPECT_EQ(read_text(bin.file("args")), "--gpu-reset -i 0\n") << r.out << r.err;
  EXPECT_EQ(r.err.find("free them first"), std::string::npos) << r.err;
}

TEST_F(GhostVerdict, UnattributedMemoryFollowsTheThreshold) {
  REQUIRE_DOUBLE();
  FakeNvml nvml(gpus(json::array(), 600ull << 20));
  auto quiet =
      output_of({"doctor", "--json", "--dev-root", dev_.path(), "--settle", "100ms", "--gpu", "0"},
                nvml.env());
  EXPECT_TRUE(quiet["findings"].empty()) << quiet["findings"].dump(2);
  auto strict = output_of({"doctor", "--json", "--dev-root", dev_.path(), "--settle", "100ms",
                           "--gpu", "0", "--unattributed-threshold", "256MiB"},
                          nvml.env());
  ASSERT_EQ(strict["findings"].size(), 1u) << strict["findings"].dump(2);
  EXPECT_EQ(strict["findings"][0]["code"], "unattributed-memory");
  EXPECT_EQ(strict["findings"][0]["severity"], "warning");
  auto bad = run_gpureap({"doctor", "--dev-root", dev_.path(), "--unattributed-threshold", "lots"},
                         nvml.env());
  EXPECT_EQ(bad.exit_code, 3);
  EXPECT_NE(bad.err.find("--unattributed-threshold"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace gpureap::testing

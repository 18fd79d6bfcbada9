// A daemon restarted while a real PyTorch job (gloo, CPU) runs rank by rank. Rank 0 is
// SIGKILLed while no daemon runs, and its launcher, which waits for rank 0 first, reaps it at
// once. Nothing in /proc then says that rank 0 ended: a rank yet to start is missing alike, and a
// one-shot doctor rightly calls nothing stalled. The restarted daemon knows, from the ranks the
// last run watched (its sightings file), and calls the job stalled; its policy matches the live
// ranks and nothing else.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "pytorch_job.h"
#include "support.h"

namespace gpureap::testing {
namespace {
namespace job_restart {

using nlohmann::json;

// The daemon's stalled-job finding, or null.
json stalled_finding(const DaemonProcess& d) {
  const json doc = json::parse(d.get("/api/v1/findings").body, nullptr, false);
  if (!doc.is_object()) return nullptr;
  for (const auto& f : doc["findings"])
    if (f["code"] == "stalled-job") return f;
  return nullptr;
}

TEST(PytorchJobRestart, ARankThatDiedWhileNoDaemonRanStallsTheJobForTheNextRun) {
  REQUIRE_DOUBLE();
  if (auto why = why_no_pytorch(); !why.empty()) GTEST_SKIP() << why;
  FakeDevRoot dev;
  for (const char* name : {"nvidia2", "nvidia3"}) std::ofstream(dev.dev(name)) << "stand-in\n";
  const std::string per_rank = dev.dev("nvidia") + "{}";
  // Rank 0 "loads" (sleeps); the others wait for it in the group's set-up.
  PythonJob job(rank_launcher_args(per_rank, 0));
  KillStrays strays;
  const std::vector<pid_t> ranks = ranks_holding(job, strays, per_rank);
  if (ranks.empty()) return;
  const pid_t launcher = job.pid();
  FakeNvml nvml(json{{"gpus", rank_per_gpu(ranks, 4, 32 * GiB)}});
  TempDir run;
  std::ofstream(run.file("config.toml"))
      << "interval = \"200ms\"\nholder_scan_interval = \"200ms\"\nlocal_socket = \""
      << run.file("gpureap.sock") << "\"\naudit_log = \"" << run.file("audit.jsonl") << "\"\n"
      << "[[policy]]\nname = \"hung\"\nanomalies = [\"stalled-job\"]\nafter = \"1h\"\n";
  const std::vector<std::string> args{"--config", run.file("config.toml"), "--dev-root",
                                      dev.path()};
  {
    DaemonProcess last(args, nvml.env());
    ASSERT_TRUE(wait_until([&] { return live_ranks(last, launcher) == 4; }, 30000))
        << last.get("/metrics").body << last.log();
    last.signal(SIGTERM);
    ASSERT_EQ(last.wait_exit(), 0) << last.log();
  }

  ::kill(ranks[0], SIGKILL);
  ASSERT_TRUE(wait_gone(ranks[0], 30000)) << "the launcher did not reap rank 0";
  auto one_shot = run_gpureap(
      {"doctor", "--json", "--settle", "0s", "--no-daemon", "--dev-root", dev.path()}, nvml.env());
  const json own = json::parse(one_shot.out, nullptr, false);
  ASSERT_TRUE(own.is_object()) << one_shot.out << one_shot.err;
  EXPECT_EQ(finding(own, "stalled-job"), nullptr) << one_shot.out;

  DaemonProcess next(args, nvml.env());
  ASSERT_GT(next.port(), 0) << next.log();
  json f;
  ASSERT_TRUE(wait_until([&] { return (f = stalled_finding(next)).is_object(); }, 30000))
      << next.get("/api/v1/findings").body << next.log();
  EXPECT_NE(next.log().find("took on the last run's sightings"), std::string::npos) << next.log();
  EXPECT_EQ(sorted(pids(f["pids"])),
            sorted(std::vector<pid_t>{launcher, ranks[1], ranks[2], ranks[3]}))
      << f.dump(2);
  EXPECT_NE(f["evidence"].dump().find("the daemon saw rank 0 (PID " + std::to_string(ranks[0]) +
                                      ") end no later than "),
            std::string::npos)
      << f.dump(2);
  json pol;
  ASSERT_TRUE(wait_until([&] {
    pol = json::parse(next.get("/api/v1/policies").body, nullptr, false);
    return pol.is_object() && pol["policies"][0]["matching"] == 3;
  })) << pol.dump(2);
  std::vector<pid_t> matched;
  for (const auto& p : pol["policies"][0]["processes"]) matched.push_back(p["pid"]);
  EXPECT_EQ(sorted(matched), sorted(std::vector<pid_t>{ranks[1], ranks[2], ranks[3]}))
      << pol.dump(2);
}

}  // namespace job_restart
}  // namespace
}  // namespace gpureap::testing

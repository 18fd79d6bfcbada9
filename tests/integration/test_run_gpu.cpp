// `gpureap run` with the NVML test double: the job's GPU memory is sampled (peak per GPU),
// its release after teardown is verified, and a leaked context is reported as still held.
// The job itself rewrites the double's scenario, since only it knows its PIDs.
#include <gtest/gtest.h>

#include <fstream>

#include "support.h"

namespace gpureap::testing {
namespace {

class RunGpu : public ::testing::Test {
 protected:
  void SetUp() override {
#ifndef FAKE_NVML_LIBRARY
    GTEST_SKIP() << "the NVML test double (tests/fake_nvml) is not built";
#endif
    // No process yet: the job adds itself.
    std::ofstream(scenario_path()) << R"({"gpus":[{"name":"Fake H200","minor":0,"processes":[]}]})";
  }

  std::string scenario_path() const {
    return dir_.file("scenario.json");
  }

  // Shell code replacing the scenario atomically (a new inode: the double re-reads it) with
  // `json`, in which the shell expands $$ and $variables.
  std::string write_scenario(const std::string& json) const {
    std::string escaped;
    for (char c : json) escaped += c == '"' ? std::string("\\\"") : std::string(1, c);
    return "echo \"" + escaped + "\" > " + scenario_path() + ".tmp && mv " + scenario_path() +
           ".tmp " + scenario_path() + "; ";
  }

  // Shell code: a PID that has already exited, listed in the scenario as `dummy`, and a wait
  // until the double has listed the GPU's processes since (it records the dead PID in its
  // state file): proof that gpureap sampled the scenario written just before.
  std::string dead_pid(const std::string& var) const {
    return var + "=$(sh -c 'echo $$'); ";
  }
  std::string wait_listed(const std::string& var) const {
    return "n=0; until grep -q \"\\\"0/$" + var + "\\\"\" " + scenario_path() +
           ".state 2>/dev/null; do n=$((n+1)); [ $n -gt 2000 ] && exit 90; sleep 0.01; done; ";
  }

  RunResult run(const std::vector<std::string>& options, const std::string& script) {
    std::vector<std::string> args{"--dev-root", dev_.path(), "run", "--report",
                                  dir_.file("report.json")};
    args.insert(args.end(), options.begin(), options.end());
    args.insert(args.end(), {"--", "sh", "-c", script});
    std::vector<std::string> env{"FAKE_NVML_SCENARIO=" + scenario_path()};
#ifdef FAKE_NVML_LIBRARY
    env.push_back(std::string("GPUREAP_NVML_LIBRARY=") + FAKE_NVML_LIBRARY);
#endif
    return run_gpureap(args, env);
  }

  nlohmann::json report() const {
    try {
      return nlohmann::json::parse(read_text(dir_.file("report.json")));
    } catch (const std::exception& e) {
      ADD_FAILURE() << "no JSON report: " << e.what();
      return nlohmann::json::object();
    }
  }

  TempDir dir_;
  FakeDevRoot dev_;
};

// A trainer forks a worker that inherits its device files and exits; the worker keeps the
// context (4 GiB) alive until gpureap ends it; the driver then takes 200 ms to release it.
TEST_F(RunGpu, PeakOfTheLeftoverHeldContextAndItsRelease) {
  std::string script = "exec 3<" + dev_.dev("nvidia0") + " 4<" + dev_.dev("nvidiactl") + "; " +
                       "sleep 1000 & w=$!; echo $w > " + dir_.file("worker") + "; " +
                       write_scenario(R"({"gpus":[{"name":"Fake H200","minor":0,"processes":[)"
                                      R"({"pid":$$,"used_bytes":4294967296,"holders":[$$,$w],)"
                                      R"("release_delay_ms":200}]}]})") +
                       "exit 3";
  auto r = run({"--grace", "10s"}, script);
  KillStrays strays{{static_cast<pid_t>(std::stol(read_text(dir_.file("worker"))))}};
  EXPECT_EQ(r.exit_code, 3) << r.err;
  auto rep = report();
  EXPECT_EQ(rep["gpu"]["available"], true) << rep["gpu"].dump(2);
  ASSERT_EQ(rep["gpu"]["peaks"].size(), 1u) << rep.dump(2);
  auto peak = rep["gpu"]["peaks"][0];
  EXPECT_EQ(peak["index"], 0);
  EXPECT_EQ(peak["name"], "Fake H200");
  EXPECT_EQ(peak["peak_bytes"], 4 * GiB);
  EXPECT_EQ(peak["processes"], 1);
  ASSERT_EQ(rep["leftovers"].size(), 1u);
  EXPECT_EQ(rep["leftovers"][0]["pid"], strays.pids[0]);
  EXPECT_EQ(rep["leftovers"][0]["ended"], true);
  EXPECT_EQ(rep["release"]["method"], "driver");
  EXPECT_EQ(rep["release"]["released"], true) << rep["release"].dump(2);
  EXPECT_TRUE(rep["release"]["seconds"].is_number());
  EXPECT_NE(r.err.find("peak GPU memory: GPU 0 (Fake H200) 4.0 GiB"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("GPU memory released"), std::string::npos) << r.err;
}

// --report FILE.html: the job's page, with the job's 4 GiB band, the capacity, and the
// moments the command exited, teardown ended and the memory came back.
TEST_F(RunGpu, TheHtmlReportDrawsTheJobAndItsRelease) {
  std::string script = "exec 3<" + dev_.dev("nvidia0") + "; sleep 1000 & w=$!; echo $w > " +
                       dir_.file("worker") + "; " +
                       write_scenario(R"({"gpus":[{"name":"Fake H200","minor":0,"processes":[)"
                                      R"({"pid":$$,"used_bytes":4294967296,"holders":[$$,$w],)"
                                      R"("release_delay_ms":200}]}]})") +
                       "sleep 0.5; exit 0";
  std::vector<std::string> args{"--dev-root", dev_.path(), "run", "--report", dir_.file("job.html"),
                                "--sample",   "100ms",     "--",  "sh",       "-c",
                                script};
  auto r = run_gpureap(args, {"FAKE_NVML_SCENARIO=" + scenario_path(),
#ifdef FAKE_NVML_LIBRARY
                              std::string("GPUREAP_NVML_LIBRARY=") + FAKE_NVML_LIBRARY
#endif
                             });
  KillStrays strays{{static_cast<pid_t>(std::stol(read_text(dir_.file("worker"))))}};
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::string html = read_text(dir_.file("job.html"));
  ASSERT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u) << html.substr(0, 200);
  EXPECT_NE(html.find("<h2>GPU 0 · Fake H200 · "), std::string::npos) << html;
  // The job's lanes under the chart: its command, and the worker the teardown ended.
  EXPECT_NE(html.find("<svg class=\"timeline\""), std::string::npos);
  EXPECT_NE(html.find("by `gpureap run` (its teardown)"), std::string::npos) << html;
  EXPECT_NE(html.find("data-series=\"job\""), std::string::npos);
  EXPECT_NE(html.find("class=\"marker marker-job-end\""), std::string::npos);
  EXPECT_NE(html.find("class=\"marker marker-teardown\""), std::string::npos);
  EXPECT_NE(html.find("class=\"marker marker-release\""), std::string::npos);
  EXPECT_NE(html.find("GPU memory released"), std::string::npos);
  EXPECT_NE(html.find("peak GPU memory: GPU 0 (Fake H200) 4.0 GiB"), std::string::npos);
}

// Memory held only while CMD runs (gone before it exits) is seen by the periodic samples.
TEST_F(RunGpu, SamplesWhileTheJobRuns) {
  std::string held = R"({"pid":$$,"used_bytes":3221225472})";
  auto with_dummy = [&](const std::string& var) {
    return write_scenario(R"({"gpus":[{"name":"Fake H200","minor":0,"processes":[)" + held +
                          R"(,{"pid":$)" + var + "}]}]}");
  };
  // Three listings in a row, each after the previous one was seen: at least one whole
  // sample lies between the first and the last, all of it with the job holding 3 GiB.
  std::string script =
      dead_pid("d1") + dead_pid("d2") + dead_pid("d3") + with_dummy("d1") + wait_listed("d1") +
      with_dummy("d2") + wait_listed("d2") + with_dummy("d3") + wait_listed("d3") +
      write_scenario(R"({"gpus":[{"name":"Fake H200","minor":0,"processes":[]}]})") + "exit 0";
  auto r = run({"--sample", "100ms"}, script);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto rep = report();
  ASSERT_EQ(rep["gpu"]["peaks"].size(), 1u) << rep.dump(2);
  EXPECT_EQ(rep["gpu"]["peaks"][0]["peak_bytes"], 3 * GiB);
  EXPECT_GE(rep["gpu"]["samples"].get<int>(), 3);
  EXPECT_EQ(rep["release"]["released"], true);
}

TEST_F(RunGpu, LeakedContextIsReportedAsStillHeld) {
  std::string script = "exec 3<" + dev_.dev("nvidia0") + "; " +
                       write_scenario(R"({"gpus":[{"name":"Fake H200","minor":0,"processes":[)"
                                      R"({"pid":$$,"used_bytes":2147483648,"leaked":true}]}]})") +
                       "echo $$ > " + dir_.file("job") + "; exit 0";
  auto r = run({"--release-timeout", "300ms"}, script);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  pid_t job = static_cast<pid_t>(std::stol(read_text(dir_.file("job"))));
  auto rep = report();
  EXPECT_EQ(rep["gpu"]["peaks"][0]["peak_bytes"], 2 * GiB);
  EXPECT_EQ(rep["release"]["checked"], true);
  EXPECT_EQ(rep["release"]["method"], "driver");
  EXPECT_EQ(rep["release"]["released"], false);
  auto held = rep["release"]["still_held"]["memory"];
  ASSERT_EQ(held.size(), 1u) << rep["release"].dump(2);
  EXPECT_EQ(held[0]["gpu"], 0);
  EXPECT_EQ(held[0]["pid"], job);
  EXPECT_EQ(held[0]["used_bytes"], 2 * GiB);
  EXPECT_EQ(held[0]["process_alive"], false);
  EXPECT_NE(r.err.find("STILL HELD"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("GPU 0: 2.0 GiB listed for pid " + std::to_string(job)), std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace gpureap::testing

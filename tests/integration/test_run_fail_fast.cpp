// `gpureap run --fail-fast`: a process of the job that exits abnormally while another holds a
// GPU file ends the whole job after the grace; a clean exit, or one that leaves nothing on a
// GPU, does not. The job's launcher here is a shell that execs sleep(1): nothing reaps its
// children, as a launcher blocked waiting for rank 0 does not reap rank 3.
#include <gtest/gtest.h>

#include "support.h"

namespace gpureap::testing {
namespace {

struct FailFastRun {
  FakeDevRoot dev;
  TempDir dir;
  RunResult result;
  nlohmann::json report;
};

// Runs `holder` (a shell command, in the background) and `failing` (another) under a shell
// that then becomes sleep(1), with --fail-fast and a --timeout that ends it otherwise.
std::unique_ptr<FailFastRun> run_job(const std::string& holder, const std::string& failing) {
  auto r = std::make_unique<FailFastRun>();
  const std::string script = holder + " & " + failing + " & exec sleep 1000";
  std::vector<std::string> args{"--dev-root",
                                r->dev.path(),
                                "--nvml-library",
                                kNoNvml,
                                "run",
                                "--fail-fast",
                                "--fail-fast-grace",
                                "200ms",
                                "--grace",
                                "2s",
                                "--timeout",
                                "5s",
                                "--report",
                                r->dir.file("report.json"),
                                "--",
                                "sh",
                                "-c",
                                script};
  r->result = run_gpureap(args);
  r->report = report_of(r->dir);
  return r;
}

TEST(RunFailFast, AFailedProcessEndsAJobThatStillHoldsAGpu) {
  auto r = std::make_unique<FailFastRun>();
  // The holder keeps GPU 0's file open on its stdin; the other kills itself with SIGKILL.
  const std::string script =
      "sleep 1000 < " + r->dev.dev("nvidia0") + " & sh -c 'kill -9 $$' & exec sleep 1000";
  r->result =
      run_gpureap({"--dev-root", r->dev.path(), "--nvml-library", kNoNvml, "run", "--fail-fast",
                   "--fail-fast-grace", "200ms", "--grace", "2s", "--timeout", "60s", "--report",
                   r->dir.file("report.json"), "--", "sh", "-c", script});
  auto rep = report_of(r->dir);
  EXPECT_EQ(rep["stop"]["reason"], "fail-fast") << rep.dump(2);
  ASSERT_TRUE(rep["failed"].is_object()) << rep.dump(2);
  EXPECT_EQ(rep["failed"]["signal"], "SIGKILL");
  EXPECT_EQ(rep["failed"]["comm"], "sh");
  EXPECT_EQ(rep["failed"]["ended_job"], true);
  EXPECT_EQ(rep["exit"]["cause"], "signaled") << rep.dump(2);  // CMD ended by gpureap's SIGTERM
  EXPECT_EQ(rep["exit"]["signal"], "SIGTERM");
  EXPECT_NE(r->result.err.find("was killed by SIGKILL"), std::string::npos) << r->result.err;
  EXPECT_NE(r->result.err.find("so gpureap ended the whole job (--fail-fast)"), std::string::npos)
      << r->result.err;
}

TEST(RunFailFast, ACleanExitOrNothingOnAGpuLeavesTheJobAlone) {
  // Exit status 0 is no failure: the job runs on until --timeout.
  auto clean = run_job("sleep 1000 < /dev/null", "sh -c 'exit 0'");
  EXPECT_EQ(clean->report["stop"]["reason"], "timeout") << clean->report.dump(2);
  EXPECT_TRUE(clean->report["failed"].is_null()) << clean->report.dump(2);
  // A failure, but no process of the job holds a GPU file: nothing to free, the job runs on.
  auto no_gpu = run_job("sleep 1000 < /dev/null", "sh -c 'exit 3'");
  EXPECT_EQ(no_gpu->report["stop"]["reason"], "timeout") << no_gpu->report.dump(2);
  ASSERT_TRUE(no_gpu->report["failed"].is_object()) << no_gpu->report.dump(2);
  EXPECT_EQ(no_gpu->report["failed"]["status"], 3);
  EXPECT_EQ(no_gpu->report["failed"]["ended_job"], false);
  EXPECT_EQ(no_gpu->result.exit_code, 124);
}

}  // namespace
}  // namespace gpureap::testing

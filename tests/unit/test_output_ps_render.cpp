// `gpureap ps` rendered once for both of its paths: its own scan and the daemon's socket.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "output/ps_render.h"
#include "output/ps_view.h"
#include "snapshot_builders.h"

namespace gpureap::output {
namespace {

using namespace gpureap::testing;
using namespace std::chrono_literals;

core::Snapshot one_holder() {
  return make_snapshot({holder(10, 1, 10)}, {gpu(0, 0, 4 * GiB, {listed(10, 4 * GiB)})});
}

TEST(OutputPsRender, TableIsThePsScreenAndNamesTheDaemonWhenItAnswered) {
  auto s = one_holder();
  auto scan = render_ps_command(s, {});
  EXPECT_EQ(scan.out, render_ps(s, Style(false), {}));
  EXPECT_EQ(scan.exit_code, 0);
  EXPECT_TRUE(scan.err.empty());

  PsRenderOptions daemon;
  daemon.daemon_age = 420ms;
  auto served = render_ps_command(s, daemon);
  EXPECT_EQ(served.out, scan.out + "(from the gpureap daemon, snapshot 0.4 s old)\n");
  daemon.color = true;
  EXPECT_NE(render_ps_command(s, daemon).out.find("\x1b[2m(from the gpureap daemon"),
            std::string::npos);
}

TEST(OutputPsRender, JsonSaysItsSource) {
  auto s = one_holder();
  auto scan = nlohmann::json::parse(render_ps_command(s, {.format = PsFormat::Json}).out);
  EXPECT_EQ(scan["source"], nlohmann::json({{"kind", "scan"}}));
  EXPECT_EQ(scan["schema"], "gpureap.snapshot/v1");
  PsRenderOptions o{.format = PsFormat::Json};
  o.daemon_age = 1500ms;
  auto served = nlohmann::json::parse(render_ps_command(s, o).out);
  EXPECT_EQ(served["source"], nlohmann::json({{"kind", "daemon"}, {"age_ms", 1500}}));
  served.erase("source");
  scan.erase("source");
  EXPECT_EQ(served, scan);
}

TEST(OutputPsRender, CsvIsUnchangedWhoeverAnswers) {
  auto s = one_holder();
  PsRenderOptions o{.format = PsFormat::Csv};
  o.daemon_age = 100ms;
  EXPECT_EQ(render_ps_command(s, o).out, render_ps_csv(s));
}

TEST(OutputPsRender, IncompleteViewAndWarningsGoToStderr) {
  auto s = make_snapshot({holder(10, 1, 10)}, {}, {.uninspectable = 2});
  s.warnings.push_back("something odd");
  auto table = render_ps_command(s, {});
  ASSERT_EQ(table.err.size(), 2u);
  EXPECT_EQ(table.err[0], "gpureap: note: something odd");
  EXPECT_EQ(table.err[1].rfind("gpureap: view incomplete: 2 processes", 0), 0u);
  // The JSON has the warnings in it; only the incomplete view is said on stderr too.
  auto json = render_ps_command(s, {.format = PsFormat::Json});
  ASSERT_EQ(json.err.size(), 1u);
  EXPECT_EQ(json.err[0], table.err[1]);
}

TEST(OutputPsRender, AFailedScanIsExitTwoWithWhatItFound) {
  auto s = one_holder();
  EXPECT_EQ(render_ps_command(s, {}).exit_code, 0);
  s.proc.scan_failures = {"the scan failed: raise the limit"};
  auto json = render_ps_command(s, {.format = PsFormat::Json});
  EXPECT_EQ(json.exit_code, kPsExitUsage);
  EXPECT_NE(json.out.find("\"complete\": false"), std::string::npos) << json.out;
  ASSERT_EQ(json.err.size(), 1u);
  EXPECT_NE(json.err[0].find("the scan failed: raise the limit"), std::string::npos);
}

TEST(OutputPsRender, DriverThatDidNotAnswerIsExitFour) {
  auto s = one_holder();
  s.drivers.backends.at(0).error_code = core::BackendErrorCode::NotAnswering;
  s.drivers.backends.at(0).error = "NVML did not answer within 5s";
  auto r = render_ps_command(s, {});
  EXPECT_EQ(r.exit_code, kPsExitDriverTimeout);
  EXPECT_EQ(r.exit_code, 4);
  ASSERT_GE(r.err.size(), 2u);
  EXPECT_EQ(r.err[r.err.size() - 2], "gpureap: NVML did not answer within 5s");
  EXPECT_EQ(r.err.back(), "  what is shown comes from /proc alone (exit status 4)");
  EXPECT_EQ(driver_timeout_lines(one_holder()), std::vector<std::string>{});
}

TEST(OutputPsRender, SourceLineRoundsToATenthOfASecond) {
  EXPECT_EQ(daemon_source_line(0ms), "(from the gpureap daemon, snapshot 0.0 s old)");
  EXPECT_EQ(daemon_source_line(12345ms), "(from the gpureap daemon, snapshot 12.3 s old)");
}

// Gone 300's 8 GiB is kept by root's worker 301; uid 1000's trainer 400 uses 3 GiB of GPU 0 too.
core::Snapshot ghost_and_job() {
  auto job = holder(400, 1, 400);
  job.details->uid = 1000;
  job.details->user = "1000";
  return make_snapshot({proc(1, 0, 1), holder(301, 1, 300), job},
                       {gpu(0, 0, 11 * GiB, {listed(300, 8 * GiB), listed(400, 3 * GiB)})});
}

TEST(OutputPsRender, RowFiltersNeverChangeAGpusFigures) {
  auto s = ghost_and_job();
  auto whole = nlohmann::json::parse(render_ps_command(s, {.format = PsFormat::Json}).out);
  auto whole_table = render_ps_command(s, {}).out;
  ASSERT_EQ(whole["gpus"][0]["memory"]["ghost_bytes"], 8 * GiB);
  for (PsSelection select :
       {PsSelection{.users = {"0"}}, PsSelection{.users = {"1000"}}, PsSelection{.pids = {400}},
        PsSelection{.pids = {300}}, PsSelection{.pids = {400}, .sort = PsSort::Memory}}) {
    auto json = nlohmann::json::parse(
        render_ps_command(s, {.format = PsFormat::Json, .select = select}).out);
    EXPECT_EQ(json["gpus"], whole["gpus"]) << "the GPU's figures are the whole GPU's";
    auto table = render_ps_command(s, {.select = select}).out;
    // The GPU section and the footer are the same; only the process rows differ.
    EXPECT_EQ(table.substr(0, table.find("PID")), whole_table.substr(0, whole_table.find("PID")));
    EXPECT_NE(table.find("8.0 GiB on GPU 0 is held by ghosts"), std::string::npos) << table;
  }
  auto only_job = nlohmann::json::parse(
      render_ps_command(s, {.format = PsFormat::Json, .select = {.users = {"1000"}}}).out);
  ASSERT_EQ(only_job["processes"].size(), 1u);
  EXPECT_EQ(only_job["processes"][0]["pid"], 400);
}

TEST(OutputPsRender, AnUnknownUserOrGpuIsAnErrorNotAnEmptyTable) {
  auto s = ghost_and_job();
  auto user = render_ps_command(s, {.select = {.users = {"no-such-user-xyz"}}});
  EXPECT_EQ(user.exit_code, 2);
  EXPECT_TRUE(user.out.empty());
  ASSERT_FALSE(user.err.empty());
  EXPECT_EQ(user.err[0], "gpureap: no user named \"no-such-user-xyz\"");
  auto gpu = render_ps_command(s, {.select = {.gpus = {3}}});
  EXPECT_EQ(gpu.exit_code, 2);
  ASSERT_FALSE(gpu.err.empty());
  EXPECT_EQ(gpu.err[0], "gpureap: GPU 3 does not exist");
  EXPECT_EQ(gpu.err[1], "  this machine has 1 GPU, GPU 0; `gpureap ps` lists them");
  // A driver that did not answer may know a GPU 3: that is the driver's status, 4.
  s.drivers.gpus.clear();
  s.drivers.backends.at(0).available = false;
  s.drivers.backends.at(0).error_code = core::BackendErrorCode::NotAnswering;
  EXPECT_EQ(render_ps_command(s, {.select = {.gpus = {3}}}).exit_code, 4);
}

TEST(OutputPsRender, ABackendWithNoGpuOfItsKindIsSilentUnlessVerbose) {
  auto s = one_holder();
  core::BackendStatus nvml;
  nvml.name = "nvml";
  nvml.available = false;
  nvml.error_code = core::BackendErrorCode::NoDevice;
  nvml.error = "libnvidia-ml.so.1 is not installed";
  s.drivers.backends.push_back(nvml);
  s.drivers.backends.at(0).set_detail("pci_ids", "none");
  auto quiet = render_ps_command(s, {});
  for (const auto& line : quiet.err) EXPECT_EQ(line.find("NVML"), std::string::npos) << line;
  EXPECT_EQ(quiet.out.find("NVML"), std::string::npos);
  auto verbose = render_ps_command(s, {.verbose = true});
  auto said = [&](const std::string& what) {
    return std::any_of(verbose.err.begin(), verbose.err.end(),
                       [&](const std::string& l) { return l.find(what) != std::string::npos; });
  };
  EXPECT_TRUE(said("NVML: no GPU of its kind here (libnvidia-ml.so.1 is not installed)"));
  EXPECT_TRUE(said("no PCI ID database"));
  EXPECT_EQ(verbose.out, quiet.out);
}

}  // namespace
}  // namespace gpureap::output

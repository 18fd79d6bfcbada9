#include <gtest/gtest.h>
#include <signal.h>

#include "supervise/report_json.h"
#include "supervise/report_text.h"

namespace gpureap::supervise {
namespace {

using std::chrono::milliseconds;

RunReport sample_report() {
  RunReport r;
  r.command = {"python", "train.py", "--name", "a b"};
  r.pid = 4242;
  r.started_at = std::chrono::system_clock::time_point(std::chrono::seconds(1'700'000'000));
  r.ended_at = r.started_at + std::chrono::seconds(75);
  r.runtime = milliseconds(74'500);
  r.teardown = milliseconds(300);
  r.exit.cause = EndCause::Exited;
  r.exit.status = 0;
  r.exit.code = 0;
  r.gpu.available = true;
  r.gpu.interval = milliseconds(1000);
  r.gpu.samples = 75;
  r.gpu.peaks.push_back({0, "NVIDIA H200", "GPU-1", 8ull << 30, milliseconds(60'000), 3});
  Leftover l;
  l.pid = 4250;
  l.comm = "pt_data_worker";
  l.cmdline = {"python", "train.py"};
  l.devices = {"/dev/nvidia0"};
  l.signals = {SIGTERM, SIGCONT, SIGKILL};
  l.ended = true;
  r.leftovers.push_back(l);
  r.release.performed = true;
  r.release.method = "driver";
  r.release.released = true;
  r.release.took = milliseconds(1'200);
  r.release.timeout = milliseconds(60'000);
  return r;
}

TEST(SuperviseReport, JsonShape) {
  auto j = run_report_to_json(sample_report());
  EXPECT_EQ(j["schema"], "gpureap.run/v1");
  EXPECT_EQ(j["command"][3], "a b");
  EXPECT_EQ(j["pid"], 4242);
  EXPECT_EQ(j["started_at"], "2023-11-14T22:13:20.000Z");
  EXPECT_DOUBLE_EQ(j["runtime_seconds"].get<double>(), 74.5);
  EXPECT_EQ(j["exit"]["code"], 0);
  EXPECT_EQ(j["exit"]["cause"], "exited");
  EXPECT_EQ(j["exit"]["status"], 0);
  EXPECT_TRUE(j["exit"]["signal"].is_null());
  EXPECT_TRUE(j["exit"]["error"].is_null());
  EXPECT_EQ(j["stop"]["reason"], "none");
  EXPECT_EQ(j["gpu"]["peaks"][0]["peak_bytes"], 8ull << 30);
  EXPECT_DOUBLE_EQ(j["gpu"]["peaks"][0]["at_seconds"].get<double>(), 60.0);
  EXPECT_EQ(j["leftovers"][0]["signals"], (nlohmann::json{"SIGTERM", "SIGCONT", "SIGKILL"}));
  EXPECT_EQ(j["leftovers"][0]["devices"][0], "/dev/nvidia0");
  EXPECT_EQ(j["release"]["method"], "driver");
  EXPECT_DOUBLE_EQ(j["release"]["seconds"].get<double>(), 1.2);
  EXPECT_TRUE(j["release"]["still_held"]["memory"].is_array());
  EXPECT_TRUE(j["kept"].is_array());
  EXPECT_TRUE(j["warnings"].is_array());
}

TEST(SuperviseReport, SummaryLines) {
  auto text = render_summary(sample_report());
  EXPECT_NE(text.find("gpureap: `python train.py --name 'a b'` exited with status 0 after 1m14s"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("peak GPU memory: GPU 0 (NVIDIA H200) 8.0 GiB"), std::string::npos) << text;
  EXPECT_NE(text.find("ended 1 leftover process of the job"), std::string::npos) << text;
  EXPECT_NE(text.find("4250  python train.py  (SIGTERM, then SIGKILL; held /dev/nvidia0)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("GPU memory released 1.2s after teardown (checked with the driver)"),
            std::string::npos)
      << text;
}

TEST(SuperviseReport, StillHeldIsLoud) {
  auto r = sample_report();
  r.release.released = false;
  r.release.took.reset();
  r.release.memory.push_back({0, 4242, 2ull << 30, false, {"no-such-process", "leaked"}});
  auto text = render_summary(r);
  EXPECT_NE(text.find("STILL HELD 1m00s after teardown (checked with the driver)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("GPU 0: 2.0 GiB listed for pid 4242 (gone, no-such-process, leaked)"),
            std::string::npos)
      << text;
}

// /proc could not be read at the end of the teardown: nothing in the report says the job is gone.
TEST(SuperviseReport, AnUnreadTeardownIsNeverReportedClean) {
  auto r = sample_report();
  r.leftovers[0].ended = false;  // seen before the reads failed, never seen gone
  r.teardown_error = core::Error{"cannot list the processes in /proc: Too many open files",
                                 "raise the limit: `ulimit -n 1024`", 24};
  auto text = render_summary(r);
  EXPECT_NE(text.find("COULD NOT VERIFY that the job's processes are gone: cannot list the "
                      "processes in /proc: Too many open files"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("`ulimit -n 1024`"), std::string::npos) << text;
  EXPECT_NE(text.find("NOT SEEN TO END"), std::string::npos) << text;
  EXPECT_EQ(text.find("STILL ALIVE"), std::string::npos) << text;
  auto j = run_report_to_json(r);
  EXPECT_EQ(j["teardown_verified"], false);
  EXPECT_EQ(j["teardown_error"]["message"],
            "cannot list the processes in /proc: Too many open files");
  EXPECT_EQ(j["teardown_error"]["hint"], "raise the limit: `ulimit -n 1024`");
  EXPECT_EQ(j["leftovers"][0]["ended"], false);

  auto clean = run_report_to_json(sample_report());
  EXPECT_EQ(clean["teardown_verified"], true);
  EXPECT_TRUE(clean["teardown_error"].is_null());
  EXPECT_EQ(render_summary(sample_report()).find("COULD NOT VERIFY"), std::string::npos);
}

// No driver answered and the scan could not read everything: the summary and the report say the
// release could not be verified, why and what to do, never that nothing of the job holds a file.
TEST(SuperviseReport, AnUnverifiedReleaseIsNeverReportedReleased) {
  auto r = sample_report();
  r.gpu.available = false;
  r.release.method = "device-files";
  r.release.released = false;
  r.release.took.reset();
  r.release.error = core::Error{
      "no driver answered, and the holder scan failed: /proc could not "
      "be listed: Too many open files; raise `ulimit -n 1024`",
      "processes of the job may still hold GPU device files"};
  auto text = render_summary(r);
  EXPECT_NE(text.find("gpureap: COULD NOT VERIFY that the job's GPU memory was released: no driver "
                      "answered, and the holder scan failed: /proc could not be listed: Too many "
                      "open files; raise `ulimit -n 1024`\n"
                      "  no process of the job was seen holding a GPU device file, but the scan "
                      "did not see everything; processes of the job may still hold GPU device "
                      "files\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("no process of the job holds"), std::string::npos) << text;
  EXPECT_EQ(text.find("STILL HELD"), std::string::npos) << text;
  EXPECT_EQ(text.find("GPU memory released"), std::string::npos) << text;
  auto j = run_report_to_json(r);
  EXPECT_EQ(j["release"]["released"], false);
  EXPECT_EQ(j["release"]["verified"], false);
  EXPECT_EQ(j["release"]["error"], (nlohmann::json{{"message", r.release.error->message},
                                                   {"hint", r.release.error->hint}}));

  auto clean = run_report_to_json(sample_report());
  EXPECT_EQ(clean["release"]["verified"], true);
  EXPECT_TRUE(clean["release"]["error"].is_null());
}

TEST(SuperviseReport, HostileTextIsEscaped) {
  auto r = sample_report();
  r.command = {"evil\x1b]0;pwned\x07", "\xff"};
  r.leftovers[0].cmdline = {"\x1b[2J"};
  r.gpu.peaks[0].name = "GPU\x1b[31m";
  auto text = render_summary(r);
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
  EXPECT_EQ(text.find('\x07'), std::string::npos) << text;
  auto json = run_report_to_json(r).dump();  // invalid UTF-8 must not throw
  EXPECT_NE(json.find("\\u001b"), std::string::npos);
}

TEST(SuperviseReport, StartFailureIsOnlyTheError) {
  RunReport r;
  r.command = {"nope"};
  r.exit.cause = EndCause::NotFound;
  r.exit.code = 127;
  r.exit.error = core::Error{"cannot run `nope`: command not found", "check the spelling"};
  auto text = render_summary(r);
  EXPECT_EQ(text, "gpureap: cannot run `nope`: command not found\n  check the spelling\n");
  EXPECT_EQ(render_error(r), text);
  EXPECT_EQ(run_report_to_json(r)["exit"]["error"]["hint"], "check the spelling");
}

TEST(SuperviseReport, CommandTextIsQuotedAndCut) {
  EXPECT_EQ(command_text({"sh", "-c", "exit 3"}), "sh -c 'exit 3'");
  EXPECT_EQ(command_text({"echo", "it's"}), "echo 'it'\\''s'");
  EXPECT_EQ(command_text({"echo", ""}), "echo ''");
  EXPECT_EQ(command_text({std::string(100, 'x')}, 10), std::string(9, 'x') + "…");
}

}  // namespace
}  // namespace gpureap::supervise

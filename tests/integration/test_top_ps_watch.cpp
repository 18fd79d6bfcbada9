// `gpureap ps --watch`: the table repainted in place on a terminal, JSON lines in a pipe.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <sstream>

#include "support.h"

namespace gpureap::testing {
namespace {

using nlohmann::json;

json watch_scenario(pid_t pid) {
  return {{"gpus",
           {{{"name", "NVIDIA H200"},
             {"uuid", "GPU-0"},
             {"minor", 0},
             {"total_bytes", 80 * GiB},
             {"processes", json::array({{{"pid", pid}, {"used_bytes", 2 * GiB}}})}}}}};
}

TEST(PsWatch, JsonPrintsOneSnapshotPerLineUntilInterrupted) {
  REQUIRE_DOUBLE();
  FakeDevRoot dev;
  Child job = holding(dev, "nvidia0");
  FakeNvml nvml(watch_scenario(job.pid()));
  BackgroundGpureap watch({"ps", "--watch", "100ms", "--json", "--dev-root", dev.path()},
                          nvml.env());
  // Wait (bounded) for three lines, then stop it like a user does.
  std::string text;
  ASSERT_TRUE(wait_until([&] {
    // BackgroundGpureap writes stdout to a file of its own: read it through /proc/PID/fd/1.
    text = read_text("/proc/" + std::to_string(watch.pid()) + "/fd/1");
    return lines_of(text).size() >= 3;
  })) << text;
  ::kill(watch.pid(), SIGINT);
  auto r = watch.wait();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto lines = lines_of(r.out);
  ASSERT_GE(lines.size(), 3u);
  for (const auto& l : lines) {
    json doc = json::parse(l);  // every line is a whole document
    EXPECT_EQ(doc["schema"], "gpureap.snapshot/v1");
    auto row = row_of(doc, job.pid());
    ASSERT_FALSE(row.is_null()) << l;
    EXPECT_EQ(row["gpus"][0]["used_bytes"], 2 * GiB);
  }
  EXPECT_NE(json::parse(lines[0])["timestamp"], json::parse(lines[2])["timestamp"]);
}

TEST(PsWatch, AWedgedDriverDoesNotStopTheLines) {
  REQUIRE_DOUBLE();
  FakeDevRoot dev;
  Child job = holding(dev, "nvidia0");
  json scenario = watch_scenario(job.pid());
  scenario["block_call"] = "nvmlDeviceGetMemoryInfo";  // blocks forever, like a wedged driver
  FakeNvml nvml(scenario);
  BackgroundGpureap watch({"ps", "--watch", "200ms", "--json", "--dev-root", dev.path()},
                          nvml.env());
  std::string text;
  ASSERT_TRUE(wait_until(
      [&] {
        text = read_text("/proc/" + std::to_string(watch.pid()) + "/fd/1");
        return lines_of(text).size() >= 2;
      },
      30000))
      << text;
  ::kill(watch.pid(), SIGINT);
  auto r = watch.wait(15000);  // exits although a thread is stuck in the driver
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto lines = lines_of(r.out);
  ASSERT_GE(lines.size(), 2u);
  for (const auto& l : lines) {
    json doc = json::parse(l);
    EXPECT_EQ(doc["backend"]["available"], false);
    EXPECT_NE(doc["backend"]["error"].get<std::string>().find("did not answer within"),
              std::string::npos)
        << l;
    EXPECT_FALSE(row_of(doc, job.pid()).is_null()) << l;  // /proc still read: the holder is there
  }
}

TEST(PsWatch, RepaintsInPlaceOnATerminal) {
  REQUIRE_DOUBLE();
  if (!have_tmux()) GTEST_SKIP() << "tmux is not installed";
  FakeDevRoot dev;
  Child job = holding(dev, "nvidia0", [&] { ::prctl(PR_SET_NAME, "watched_job"); });
  FakeNvml nvml(watch_scenario(job.pid()));
  TmuxGpureap watch({"ps", "--watch", "200ms", "--dev-root", dev.path()}, nvml.env(), 160, 30);
  auto s = watch.wait_until([&](const std::string& sc) { return !rows_of(sc, job.pid()).empty(); },
                            "the job's row");
  // Several frames later: still one screen, drawn from the top, nothing scrolled away.
  auto first_clock = s.substr(0, s.find('\n'));
  EXPECT_NE(first_clock.find("Every 200ms: gpureap ps"), std::string::npos) << s;
  s = watch.wait_until(
      [&](const std::string& sc) { return sc.substr(0, sc.find('\n')) != first_clock; },
      "a later frame");
  auto count = [](const std::string& text, const std::string& needle) {
    size_t n = 0;
    for (size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count(s, "Every 200ms: gpureap ps"), 1u) << s;
  EXPECT_EQ(rows_of(s, job.pid()).size(), 1u);
  EXPECT_EQ(watch.value("#{history_size}"), "0");     // repainted in place, never scrolled
  EXPECT_EQ(watch.value("#{cursor_flag}"), "0");      // no cursor blinking over the table
  EXPECT_TRUE(has_sgr_color(watch.screen(true), 1));  // colour reaches the terminal (bold titles)
  watch.keys({"C-c"});
  EXPECT_EQ(watch.exit_code(), 0);
  EXPECT_EQ(watch.value("#{cursor_flag}"), "1");  // given back
}

TEST(PsWatch, RejectsWhatItCannotDo) {
  auto r = run_gpureap({"ps", "--watch", "--csv"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--watch cannot print CSV"), std::string::npos) << r.err;
  r = run_gpureap({"ps", "--watch", "10ms"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("too short"), std::string::npos) << r.err;
  r = run_gpureap({"ps", "--watch", "soon"});
  EXPECT_EQ(r.exit_code, 2);
  r = run_gpureap({"top"});  // stdin is not a terminal here
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("needs a terminal"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("ps --watch"), std::string::npos);
  r = run_gpureap({"top", "-d", "0"});
  EXPECT_EQ(r.exit_code, 2);
}

TEST(PsWatch, PipeGetsWholeFramesWithoutEscapes) {
  REQUIRE_DOUBLE();
  FakeDevRoot dev;
  Child job = holding(dev, "nvidia0");
  FakeNvml nvml(watch_scenario(job.pid()));
  BackgroundGpureap watch({"ps", "--watch", "100ms", "--dev-root", dev.path()}, nvml.env());
  std::string text;
  ASSERT_TRUE(wait_until([&] {
    text = read_text("/proc/" + std::to_string(watch.pid()) + "/fd/1");
    size_t n = 0;
    for (size_t p = text.find("gpureap ps"); p != std::string::npos;
         p = text.find("gpureap ps", p + 1))
      ++n;
    return n >= 2;
  })) << text;
  ::kill(watch.pid(), SIGTERM);
  auto r = watch.wait();
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.find('\x1b'),
            std::string::npos);  // not a terminal: no cursor movement, no colour
}

}  // namespace
}  // namespace gpureap::testing

// Where the daemon keeps its sightings for the next run (`sightings_file`): a daemon with no
// local socket (the Kubernetes manifest's) keeps them where the key says, in a directory it makes
// for itself, and its next run takes them on; `sightings_file = ""` keeps none beside the
// socket. Real processes, the real daemon, the NVML test double.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "support.h"

namespace gpureap::testing {
namespace {
namespace sightings_path {

using nlohmann::json;

struct ListedJob {
  FakeDevRoot dev;
  Child job = holding(dev, "nvidia0");
  FakeNvml nvml{json{{"gpus",
                      {{{"name", "NVIDIA H200"},
                        {"uuid", "GPU-path-0"},
                        {"minor", 0},
                        {"total_bytes", 80 * GiB},
                        {"processes", {{{"pid", job.pid()}, {"used_bytes", 4 * GiB}}}}}}}}};
  TempDir run;

  void write_config(const std::string& config_text) const {
    std::ofstream(run.file("config.toml"))
        << "interval = \"200ms\"\nholder_events = false\naudit_log = \"" << run.file("audit.jsonl")
        << "\"\n"
        << config_text;
  }

  std::unique_ptr<DaemonProcess> daemon(const std::string& config_text) const {
    write_config(config_text);
    auto d = std::make_unique<DaemonProcess>(
        std::vector<std::string>{"--config", run.file("config.toml"), "--dev-root", dev.path()},
        nvml.env());
    EXPECT_GT(d->port(), 0) << d->log();
    return d;
  }
};

// The PIDs a sightings file lists (empty when it cannot be read).
std::vector<pid_t> listed_in(const std::string& path) {
  std::vector<pid_t> pids;
  try {
    const json saved = json::parse(read_text(path));
    for (const auto& l : saved["carried"]["listings"]) pids.push_back(l["pid"].get<pid_t>());
  } catch (const std::exception&) {
  }
  return pids;
}

TEST(SightingsFileKey, KeepsThemWithoutASocketAndTheNextRunTakesThemOn) {
  REQUIRE_DOUBLE();
  ListedJob s;
  const std::string dir = s.run.file("state");  // missing: the daemon makes it
  const std::string file = dir + "/sightings.json";
  const std::string config = "local_socket = \"\"\nsightings_file = \"" + file + "\"\n";
  auto d = s.daemon(config);
  ASSERT_TRUE(wait_until([&] { return listed_in(file) == std::vector<pid_t>{s.job.pid()}; }))
      << d->log();
  // Another file on a reload: the file this run took on stays its file until the next start.
  s.write_config("local_socket = \"\"\nsightings_file = \"" + s.run.file("elsewhere.json") +
                 "\"\n");
  d->signal(SIGHUP);
  EXPECT_TRUE(
      d->wait_log("sightings_file changes at the next start; until then the sightings "
                  "are kept in " +
                  file))
      << d->log();
  s.write_config(config);
  d->signal(SIGTERM);
  ASSERT_EQ(d->wait_exit(), 0) << d->log();
  EXPECT_FALSE(std::filesystem::exists(s.run.file("elsewhere.json")));
  struct stat st {};
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);

  auto next = s.daemon(config);
  EXPECT_TRUE(next->wait_log("took on the last run's sightings from " + file + ": 1 listed PID"))
      << next->log();
}

TEST(SightingsFileKey, NoneKeepsNothingBesideTheSocket) {
  REQUIRE_DOUBLE();
  ListedJob s;
  const std::string socket = s.run.file("gpureap.sock");
  auto d = s.daemon("local_socket = \"" + socket + "\"\nsightings_file = \"\"\n");
  ASSERT_TRUE(d->wait_log(kServingLocalSocket + socket)) << d->log();
  // Samples with the job listed are published: a kept file would have been written by now.
  ASSERT_TRUE(wait_until([&] {
    return d->metric("gpureap_gpu_memory_used_bytes{gpu=\"0\"").value_or(0) > 0;
  })) << d->log();
  d->signal(SIGTERM);
  ASSERT_EQ(d->wait_exit(), 0) << d->log();  // a stop writes a kept file
  EXPECT_FALSE(std::filesystem::exists(s.run.file("sightings.json")));
  EXPECT_EQ(d->log().find("sightings"), std::string::npos) << d->log();
}

}  // namespace sightings_path
}  // namespace
}  // namespace gpureap::testing

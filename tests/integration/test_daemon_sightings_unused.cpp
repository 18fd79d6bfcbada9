// A command takes the daemon's word only where its PIDs name the command's processes: the same
// boot and PID namespace. Where they do not (here a daemon that reads the /proc of another PID
// namespace, as the host's daemon is to a command in a container):
// - a command that signals from its own scan (`kill`, `doctor --fix`, `policy test`) takes none
//   of the daemon's sightings of the driver's lists, says so once, and why; with sightings it
//   takes, with --no-daemon and with no daemon on the node it says nothing of them;
// - `ps`, `doctor` and `top` show their own scan instead of the daemon's, and the first two say
//   why once.
// Real processes, the real daemon, the NVML test double.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "support.h"

namespace gpureap::testing {
namespace {
namespace sightings_unused {

using nlohmann::json;

const std::string kUnused = "gpureap: the daemon's sightings of the driver's lists are not used: ";
const std::string kMeaning =
    "; this command decides on its own scan: a process that took a listed number may pass for "
    "the listed one\n";

size_t count_of(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// The value after `key ` on its line of /proc/stat-like `text`.
std::string stat_line(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key + " ", 0) == 0) return line.substr(key.size() + 1);
  return "";
}

json one_job_listed(pid_t job) {
  return {{"gpus",
           {{{"name", "NVIDIA H200"},
             {"uuid", "GPU-sight-0"},
             {"minor", 0},
             {"total_bytes", 80 * GiB},
             {"processes", {{{"pid", job}, {"used_bytes", 4 * GiB}}}}}}}};
}

struct Scene {
  FakeDevRoot dev;
  Child job = holding(dev, "nvidia0");
  FakeNvml nvml{one_job_listed(job.pid())};
  TempDir run;
  std::string socket = run.file("gpureap.sock");
  std::string config = run.file("config.toml");

  Scene() {
    std::ofstream(config) << "interval = \"250ms\"\nholder_events = false\nlocal_socket = \""
                          << socket << "\"\naudit_log = \"" << run.file("audit.jsonl") << "\"\n";
  }

  // A /proc of this boot seen from another PID namespace (a container's): the fixture tree, with
  // this kernel's boot time and a namespace inode other than this process's.
  std::string other_namespace_proc() const {
    namespace fs = std::filesystem;
    const std::string root = run.file("proc");
    fs::copy(std::string(GPUREAP_FIXTURES) + "/proc/host", root,
             fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    std::string stat = read_text(root + "/stat");
    const std::string fixture_btime = "btime " + stat_line(stat, "btime");
    stat.replace(stat.find(fixture_btime), fixture_btime.size(),
                 "btime " + stat_line(read_text("/proc/stat"), "btime"));
    std::ofstream(root + "/stat") << stat;
    const std::string ours = fs::read_symlink("/proc/self/ns/pid").string();  // pid:[N]
    const unsigned long long inode = std::stoull(ours.substr(5));
    fs::remove(root + "/self/ns/pid");
    fs::create_symlink("pid:[" + std::to_string(inode + 1) + "]", root + "/self/ns/pid");
    return root;
  }

  std::unique_ptr<DaemonProcess> daemon(const std::vector<std::string>& roots) const {
    std::vector<std::string> args{"--config", config, "--dev-root", dev.path()};
    args.insert(args.end(), roots.begin(), roots.end());
    auto d = std::make_unique<DaemonProcess>(args, nvml.env());
    EXPECT_TRUE(d->wait_log(kServingLocalSocket + socket)) << d->log();
    return d;
  }

  // The environment of a command asking the daemon on `at` (none there: no daemon).
  std::vector<std::string> env_asking(const std::string& at) const {
    auto env = nvml.env();
    env.push_back("GPUREAP_DAEMON_SOCKET=" + at);
    return env;
  }

  // gpureap with the test's dev root, asking the daemon on `at` for its sightings alone (a
  // command with roots of its own takes no other answer of the daemon).
  RunResult command(std::vector<std::string> args, const std::string& at) const {
    args.insert(args.end(), {"--dev-root", dev.path()});
    return run_gpureap(args, env_asking(at));
  }

  // Every command that decides on its own scan with the daemon's sightings, and what each said.
  std::vector<RunResult> deciders(const std::string& at) const {
    return {command({"kill", std::to_string(job.pid()), "--dry-run", "--json"}, at),
            command({"kill", "--ghosts", "--dry-run"}, at),
            command({"doctor", "--fix", "--yes", "--settle", "0s"}, at),
            command({"policy", "test", "--config", config}, at)};
  }
};

// The plan of `kill PID --dry-run --json`: the job alone, whatever the daemon said.
void expect_job_planned(const RunResult& r, pid_t job) {
  json plan = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(plan.is_object()) << r.out << r.err;
  ASSERT_EQ(plan["plan"]["targets"].size(), 1u) << r.out;
  EXPECT_EQ(plan["plan"]["targets"][0]["pid"], job) << r.out;
  EXPECT_EQ(plan["plan"]["gone"], json::array()) << r.out;
}

TEST(DaemonSightings, NotTakenFromAnotherPidNamespaceAndSaidOnce) {
  REQUIRE_DOUBLE();
  Scene s;
  auto d = s.daemon({"--proc-root", s.other_namespace_proc()});
  const auto runs = s.deciders(s.socket);
  for (const auto& r : runs) {
    EXPECT_EQ(count_of(r.err, kUnused), 1u) << r.err;
    EXPECT_NE(r.err.find(kUnused + "they come from another PID namespace" + kMeaning),
              std::string::npos)
        << r.err;
  }
  expect_job_planned(runs[0], s.job.pid());

  // --no-daemon: the command asks for no sightings, and has nothing to say of them.
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"kill", "--ghosts", "--dry-run", "--no-daemon"},
           {"doctor", "--fix", "--yes", "--settle", "0s", "--no-daemon"}}) {
    auto r = s.command(args, s.socket);
    EXPECT_EQ(r.err.find("sightings"), std::string::npos) << r.err;
  }
}

TEST(DaemonSightings, NothingIsSaidWhereTheyAreTakenOrThereIsNoDaemon) {
  REQUIRE_DOUBLE();
  Scene s;
  for (const auto& r : s.deciders(s.run.file("none.sock")))
    EXPECT_EQ(r.err.find("sightings"), std::string::npos) << r.err;
  auto d = s.daemon({});
  const auto runs = s.deciders(s.socket);
  for (const auto& r : runs) EXPECT_EQ(r.err.find("sightings"), std::string::npos) << r.err;
  expect_job_planned(runs[0], s.job.pid());
}

// `ps` and `doctor` without roots of their own, which the daemon may answer: here they scan on
// their own, and say why once.
TEST(DaemonView, NotShownFromAnotherPidNamespaceAndSaidOnce) {
  REQUIRE_DOUBLE();
  Scene s;
  auto d = s.daemon({"--proc-root", s.other_namespace_proc()});
  const std::string foreign =
      "gpureap: the daemon on " + s.socket +
      " reads other processes than this command's (they come from another PID namespace): its "
      "PIDs would name other processes here; this command scans on its own\n";
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"ps", "--json"}, {"doctor", "--json", "--settle", "0s"}}) {
    SCOPED_TRACE(args[0]);
    auto r = run_gpureap(args, s.env_asking(s.socket));
    EXPECT_EQ(count_of(r.err, "reads other processes"), 1u) << r.err;
    EXPECT_NE(r.err.find(foreign), std::string::npos) << r.err;
    const json doc = json::parse(r.out, nullptr, false);
    ASSERT_TRUE(doc.is_object()) << r.out << r.err;
    EXPECT_EQ(doc["source"]["kind"], "scan") << r.out;
  }
}

TEST(DaemonView, TopSamplesOnItsOwnBesideADaemonOfAnotherPidNamespace) {
  REQUIRE_TERMINAL();
  Scene s;
  auto d = s.daemon({"--proc-root", s.other_namespace_proc()});
  TmuxGpureap top({"top", "-d", "300ms"}, s.env_asking(s.socket), 140, 40);
  const auto screen = top.wait_until(
      [&](const std::string& sc) { return !rows_of(sc, s.job.pid()).empty(); }, "the job's row");
  EXPECT_EQ(screen.find("from the gpureap daemon"), std::string::npos) << screen;
  top.keys({"q"});
  EXPECT_EQ(top.exit_code(), 0);
}

}  // namespace sightings_unused
}  // namespace
}  // namespace gpureap::testing

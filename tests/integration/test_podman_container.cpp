// A real container, run by podman with runc, whose processes hold stand-in device files: its
// entrypoint (a shell, PID 1 of the container's PID namespace) starts a job with a context of its
// own, an NVML monitor, and a trainer whose forked worker inherits the trainer's open GPU file.
// Then the trainer is killed. The entrypoint's children have an init for parent and are no
// orphans; the worker keeps the gone trainer's context and is what `kill --ghosts` ends. The image
// is imported from a busybox-static root filesystem the test builds: no registry is needed.
// Skips, saying why, where podman cannot run a container.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "support.h"

namespace gpureap::testing {
namespace {

using nlohmann::json;

constexpr const char* kBusybox = "/bin/busybox";  // busybox-static's: runs in any root filesystem

// podman, bounded in time: a wedged storage lock or runtime fails the test instead of hanging it.
RunResult podman(std::vector<std::string> args, int seconds = 60) {
  std::vector<std::string> argv{"timeout", "-k", "5", std::to_string(seconds), "podman"};
  argv.insert(argv.end(), args.begin(), args.end());
  const char* path = std::getenv("PATH");
  return run_program_in(argv, {std::string("PATH=") + (path ? path : "/usr/sbin:/usr/bin:/bin")});
}

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  for (size_t start = 0; start <= dirs.size();) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    if (end > start &&
        ::access((dirs.substr(start, end - start) + "/" + program).c_str(), X_OK) == 0)
      return true;
    start = end + 1;
  }
  return false;
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// An image imported from a busybox-static root filesystem and one container of it, both
// removed at the end whatever happened. `why_not` says why podman could not run it.
class PodmanScene {
 public:
  explicit PodmanScene(const FakeDevRoot& dev)
      : tag_("gpureap-test-" + std::to_string(::getpid())),
        image_("localhost/" + tag_ + ":rootfs"),
        name_(tag_ + "-trainer") {
    why_not_ = trimmed(prepare());
    if (!why_not_.empty()) return;
    auto started = podman(run_args({"-d", "--name", name_, "-v", dev.path() + ":" + dev.path()},
                                   {"sh", "-c", script(dev)}));
    started_ = started.exit_code == 0;
    start_error_ = started.err;
  }
  ~PodmanScene() {
    if (started_ || !start_error_.empty()) podman({"rm", "-f", "-t", "0", name_});
    if (imported_) podman({"rmi", "-f", image_});
  }
  PodmanScene(const PodmanScene&) = delete;

  const std::string& why_not() const { return why_not_; }
  bool started() const { return started_; }
  const std::string& start_error() const { return start_error_; }
  const std::string& name() const { return name_; }
  pid_t init() const {
    auto r = podman({"inspect", "-f", "{{.State.Pid}}", name_});
    return r.exit_code == 0 ? static_cast<pid_t>(std::atoi(r.out.c_str())) : 0;
  }

 private:
  // Empty when podman can run a container of the image here; else why not.
  std::string prepare() {
    if (::geteuid() != 0) return "needs root (rootless podman is not what this test is about)";
    for (const char* program : {"podman", "runc", "tar", "timeout"})
      if (!on_path(program)) return std::string(program) + " is not installed";
    if (::access(kBusybox, X_OK) != 0) return "busybox-static is not installed";
    if (auto why = build_image(); !why.empty()) return why;
    // A first container that only exits says whether this machine can run one at all.
    auto probe = podman(run_args({"--rm"}, {"true"}));
    if (probe.exit_code != 0) return "podman cannot run a container here: " + probe.err;
    return "";
  }

  std::string build_image() {
    namespace fs = std::filesystem;
    const std::string root = dir_.file("rootfs");
    for (const char* d : {"bin", "dev", "proc", "sys", "tmp", "etc"})
      fs::create_directories(root + "/" + d);
    fs::copy_file(kBusybox, root + "/bin/busybox");
    for (const char* applet : {"sh", "sleep", "true", "setsid"})
      fs::create_symlink("busybox", root + "/bin/" + applet);
    const char* path = std::getenv("PATH");
    auto tar = run_program_in({"tar", "-C", root, "-cf", dir_.file("rootfs.tar"), "."},
                              {std::string("PATH=") + (path ? path : "/usr/bin:/bin")});
    if (tar.exit_code != 0) return "cannot build the root filesystem: " + tar.err;
    auto imported = podman({"import", dir_.file("rootfs.tar"), image_});
    imported_ = imported.exit_code == 0;
    return imported_ ? "" : "podman cannot import an image here: " + imported.err;
  }

  // runc, the runtime scripts/install-deps.sh installs: crun has refused hybrid cgroup layouts
  // (v1 with a unified mount). The limits podman asks for by default are above what a runner
  // without CAP_SYS_RESOURCE may set.
  std::vector<std::string> run_args(std::vector<std::string> extra,
                                    std::vector<std::string> command) const {
    std::vector<std::string> a{"run",       "--runtime",      "runc",     "--pull=never",
                               "--network", "none",           "--ulimit", "nofile=1024:1024",
                               "--ulimit",  "nproc=4096:4096"};
    a.insert(a.end(), extra.begin(), extra.end());
    a.push_back(image_);
    a.insert(a.end(), command.begin(), command.end());
    return a;
  }

  // Each process is a `sleep` whose argument names it. The trainer leads a session of its own
  // (as a launcher's `setsid` makes it), opens nvidia0, forks its worker (which inherits that
  // open file and the session) and becomes `sleep 603`; the others run in the entrypoint's
  // process group, as a shell without job control starts them. The session is the kernel's word
  // that the worker is the trainer's, once the trainer is gone and its worker reparented.
  static std::string script(const FakeDevRoot& dev) {
    return "(exec 5<" + dev.dev("nvidia0") + "; exec sleep 601) & " +    // a job with a context
           "(exec 6<" + dev.dev("nvidiactl") + "; exec sleep 602) & " +  // an NVML monitor
           "(exec setsid sh -c 'exec 7<" + dev.dev("nvidia0") +
           "; sleep 604 & exec sleep 603') & " + "wait";
  }

  TempDir dir_;
  std::string tag_, image_, name_;
  std::string why_not_, start_error_;
  bool imported_ = false, started_ = false;
};

TEST(PodmanContainer, TheEntrypointsChildrenAreNoOrphansAndTheKilledTrainersWorkerIsItsKeeper) {
  REQUIRE_DOUBLE();
  FakeDevRoot dev;
  PodmanScene scene(dev);
  if (!scene.why_not().empty()) GTEST_SKIP() << scene.why_not();
  ASSERT_TRUE(scene.started()) << "podman run: " << scene.start_error();
  const pid_t init = scene.init();
  ASSERT_GT(init, 1);
  std::map<std::string, pid_t> p;
  ASSERT_TRUE(wait_until([&] { return (p = sleepers_under(init)).size() == 4; }, 60000))
      << p.size() << " of the container's 4 processes started";
  const pid_t job = p["601"], monitor = p["602"], trainer = p["603"], worker = p["604"];
  KillStrays strays{{job, monitor, trainer, worker}};
  for (pid_t child : {job, monitor, trainer}) EXPECT_EQ(parent_of(child), init);
  ASSERT_EQ(::kill(trainer, SIGKILL), 0);
  ASSERT_TRUE(wait_gone(trainer));
  ASSERT_TRUE(wait_until([&] { return parent_of(worker) == init; }))
      << "the worker was reparented to the entrypoint";

  // The driver lists the job and the gone trainer by their host PIDs.
  json processes = {{{"pid", job}, {"used_bytes", 10 * GiB}},
                    {{"pid", trainer}, {"used_bytes", 8 * GiB}, {"holders", {trainer, worker}}}};
  json gpu0 = {{"name", "NVIDIA H200"},
               {"uuid", "GPU-0000"},
               {"minor", 0},
               {"total_bytes", 80 * GiB},
               {"processes", processes}};
  FakeNvml nvml(json{{"gpus", json::array({gpu0})}});
  auto snap = run_json({"ps", "--json", "--dev-root", dev.path()}, nvml.env());
  for (pid_t pid : {job, monitor, worker}) {
    auto row = row_of(snap, pid);
    ASSERT_FALSE(row.is_null()) << pid << " has no row: " << snap.dump(2);
    EXPECT_EQ(row["container"]["runtime"], "podman") << row.dump(2);
    EXPECT_EQ(row["container"]["name"], scene.name()) << row.dump(2);
  }
  EXPECT_EQ(row_of(snap, job)["anomalies"], json::array()) << row_of(snap, job).dump(2);
  EXPECT_EQ(row_of(snap, monitor)["anomalies"], json::array()) << row_of(snap, monitor).dump(2);
  auto gone = row_of(snap, trainer);
  EXPECT_EQ(gone["anomalies"], json::array({"no-such-process"})) << gone.dump(2);
  EXPECT_EQ(gone["ghost"]["keepers"], json::array({worker})) << gone.dump(2);
  auto keeper = row_of(snap, worker);
  EXPECT_EQ(keeper["keeps"], json::array({trainer})) << keeper.dump(2);
  EXPECT_NE(keeper["anomalies"].dump().find("inherited-holder"), std::string::npos)
      << keeper.dump(2);

  auto plan = parse_output(run_gpureap(
      {"kill", "--json", "--dev-root", dev.path(), "--ghosts", "--dry-run"}, nvml.env()));
  EXPECT_EQ(planned_pids(plan), std::vector<pid_t>{worker}) << plan.dump(2);

  auto doc = parse_output(
      run_gpureap({"doctor", "--json", "--dev-root", dev.path(), "--settle", "100ms"}, nvml.env()));
  ASSERT_TRUE(doc.contains("findings")) << doc.dump(2);
  for (const auto& f : doc["findings"]) EXPECT_NE(f["code"], "orphan-holder") << f.dump(2);
}

}  // namespace
}  // namespace gpureap::testing

// `gpureap reset` must never go ahead while a live process may use the GPU: against holders it
// can only miss by asking too early, or by looking from where they are out of sight.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include "support.h"
#include "sys_tree.h"

namespace gpureap::testing {
namespace {
namespace reset_guard {

using nlohmann::json;

json one_gpu(json processes, uint64_t driver_held = 0) {
  return {{"gpus",
           {{{"name", "NVIDIA H200"},
             {"uuid", "GPU-0000"},
             {"pci_bus_id", "00000000:17:00.0"},
             {"minor", 0},
             {"total_bytes", 80 * GiB},
             {"driver_held_bytes", driver_held},
             {"processes", processes}}}}};
}

// gpureap asks "Reset GPU 0?" of a GPU nothing holds; while it waits a process opens `file` of
// the dev root; "y": the check made again refuses, names the process and how to end it, and
// nvidia-smi never runs. `args`: more of the reset's options.
void expect_an_opener_while_asked_blocks_the_reset(const FakeDevRoot& dev, const std::string& file,
                                                   const std::vector<std::string>& args) {
  FakeNvml nvml(one_gpu(json::array(), 3 * GiB));
  FakeNvidiaSmi smi;
  auto env = nvml.env();
  env.push_back(smi.path_env());
  std::vector<std::string> reset{"reset", "--gpu", "0", "--dev-root", dev.path()};
  reset.insert(reset.end(), args.begin(), args.end());
  TmuxGpureap tty(reset, env, 200, 40);
  tty.wait_for("Reset GPU 0? [y/N]");
  Child opener = holding(dev, file);
  tty.type("y");
  tty.keys({"Enter"});
  EXPECT_EQ(tty.exit_code(), 1);
  const std::string screen = tty.screen();
  EXPECT_NE(screen.find("gpureap: refusing to reset GPU 0: this process uses it, and a reset "
                        "would end it:\n  PID " +
                        std::to_string(opener.pid()) + " ("),
            std::string::npos)
      << screen;
  EXPECT_NE(screen.find("  end it first: gpureap kill " + std::to_string(opener.pid())),
            std::string::npos)
      << screen;
  EXPECT_EQ(screen.find("GPU 0 reset"), std::string::npos) << screen;
  EXPECT_EQ(smi.args(), "");  // never ran
  EXPECT_TRUE(is_alive(opener.pid()));
}

// The check was made before the question; a job opened the GPU while gpureap waited for the
// answer. The "y" was given to a GPU nothing held: the reset checks again, and refuses.
TEST(ResetGuard, AJobThatOpensTheGpuWhileGpureapAsksBlocksTheReset) {
  REQUIRE_TERMINAL();
  if (::geteuid() != 0) GTEST_SKIP() << "a reset asks only as root";
  FakeDevRoot dev;
  expect_an_opener_while_asked_blocks_the_reset(dev, "nvidia0", {});
}

// gpureap in a container's PID namespace: the driver lists a live job of the host by its host
// PID, which no /proc there shows. That PID is out of sight, not gone: no reset, not even planned.
TEST(ResetGuard, FromInsideAPidNamespaceAListedJobOutsideIsNotGone) {
  REQUIRE_DOUBLE();
  if (::geteuid() != 0) GTEST_SKIP() << "needs root for unshare --pid";
  FakeDevRoot dev;
  Child host_job = holding(dev, "nvidia0");
  // Listed whatever the double's own /proc shows: it runs in the namespace too.
  FakeNvml nvml(
      one_gpu(json::array({{{"pid", host_job.pid()}, {"used_bytes", 4 * GiB}, {"leaked", true}}})));
  FakeNvidiaSmi smi;
  auto env = nvml.env();
  env.push_back(smi.path_env());
  for (const char* mode : {"--dry-run", "--yes"}) {
    BackgroundGpureap inside({"reset", "--gpu", "0", mode, "--dev-root", dev.path()}, env,
                             {"unshare", "--pid", "--fork", "--mount-proc"});
    auto r = inside.wait();
    if (r.err.find("unshare:") != std::string::npos)
      GTEST_SKIP() << "unshare --pid is not available here: " << r.err;
    EXPECT_EQ(r.exit_code, 2) << mode << "\n" << r.out << r.err;
    EXPECT_EQ(r.out, "") << mode;
    EXPECT_EQ(r.err,
              "gpureap: gpureap cannot prove that nothing uses GPU 0: it runs in a child PID "
              "namespace (a container), and processes outside it are out of its sight\n"
              "  run the reset from the host's PID namespace\n")
        << mode;
  }
  EXPECT_EQ(smi.args(), "");  // never ran
  EXPECT_TRUE(is_alive(host_job.pid()));
}

// The job's main thread has exited and its other thread holds the GPU: /proc
// shows the leader as a zombie with an empty fd table, yet the job runs and blocks the reset.
TEST(ResetGuard, AJobWhoseMainThreadExitedStillBlocksTheReset) {
  REQUIRE_DOUBLE();
  FakeDevRoot dev;
  Ready ready;
  const std::string gpu = dev.dev("nvidia0");
  Child job([&] {
    pthread_t worker;
    static Ready* signal_ready = &ready;
    static std::string gpu_file = gpu;
    ::pthread_create(
        &worker, nullptr,
        [](void*) -> void* {
          hold(gpu_file);
          signal_ready->signal();
          for (;;) ::pause();
        },
        nullptr);
    // The main thread ends as pthread_exit() ends it, without its unwinding (which the test
    // framework would catch in this forked copy of it).
    ::syscall(SYS_exit, 0);
  });
  ready.wait();
  ASSERT_TRUE(wait_for_state(job.pid(), 'Z')) << "the main thread did not exit";
  FakeNvml nvml(one_gpu(json::array()));
  FakeNvidiaSmi smi;
  auto env = nvml.env();
  env.push_back(smi.path_env());
  auto r = run_gpureap({"reset", "--gpu", "0", "--yes", "--dev-root", dev.path()}, env);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("  PID " + std::to_string(job.pid()) + " ("), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("holds " + gpu), std::string::npos) << r.err;
  EXPECT_EQ(smi.args(), "");  // never ran
}

// A scan short of file descriptors misses holders: whatever the limit, the reset never runs
// and never says that nothing holds the GPU while a job holds it.
TEST(ResetGuard, AScanShortOfFileDescriptorsNeverLetsTheResetRun) {
  REQUIRE_DOUBLE();
  if (::geteuid() != 0) GTEST_SKIP() << "a reset needs root";
  FakeDevRoot dev;
  Child job = holding(dev, "nvidia0");
  FakeNvml nvml(one_gpu(json::array(), 3 * GiB));
  FakeNvidiaSmi smi;
  for (const char* bpf : {"GPUREAP_BPF=0", "GPUREAP_BPF=1"}) {
    auto env = nvml.env();
    env.push_back(smi.path_env());
    env.push_back(bpf);
    for (int limit = 4; limit <= 24; ++limit) {
      SCOPED_TRACE(std::string(bpf) + ", ulimit -n " + std::to_string(limit));
      auto r = run_gpureap_with_fd_limit(
          limit, {"reset", "--gpu", "0", "--yes", "--dev-root", dev.path()}, env);
      EXPECT_NE(r.exit_code, 0) << r.out << r.err;
      EXPECT_EQ(r.out.find("nothing holds it"), std::string::npos) << r.out << r.err;
      EXPECT_EQ(smi.args(), "") << r.out << r.err;  // never ran
    }
  }
  EXPECT_TRUE(is_alive(job.pid()));
}

// gpureap run by a user who cannot read another user's open files: root's job holds the GPU
// out of its sight. It cannot prove that nothing uses the GPU, and says so; it plans nothing.
TEST(ResetGuard, AnotherUsersUnreadableJobIsNoProofThatNothingHoldsTheGpu) {
  REQUIRE_DOUBLE();
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run gpureap as nobody";
  if (!binary_runnable_as_nobody()) GTEST_SKIP() << "nobody cannot reach the gpureap binary here";
  FakeDevRoot dev;
  Child job = holding(dev, "nvidia0");
  FakeNvml nvml(one_gpu(json::array(), 3 * GiB));
  ::chmod(dev.path().c_str(), 0755);
  ::chmod(nvml.path().c_str(), 0755);
  ::chmod(nvml.scenario_path().c_str(), 0644);
  FakeNvidiaSmi smi;
  ::chmod(smi.path().c_str(), 0755);
  auto env = nvml.env();
  env.push_back(smi.path_env());
  auto r =
      run_program_in({"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                      GPUREAP_BINARY, "reset", "--gpu", "0", "--dry-run", "--dev-root", dev.path()},
                     env);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err.rfind("gpureap: gpureap cannot prove that nothing uses GPU 0: ", 0), 0u) << r.err;
  EXPECT_EQ(smi.args(), "");
  EXPECT_TRUE(is_alive(job.pid()));
}

// A thread that left its process's fd table (unshare(CLONE_FILES)) holds the GPU there; the main
// thread's table, /proc/PID/fd, holds nothing. The process blocks the reset all the same.
TEST(ResetGuard, AThreadsOwnFdTableBlocksTheReset) {
  REQUIRE_DOUBLE();
  FakeDevRoot dev;
  Ready ready;
  static std::string gpu_file;
  gpu_file = dev.dev("nvidia0");
  Child job([&] {
    pthread_t worker;
    static Ready* signal_ready = &ready;
    ::pthread_create(
        &worker, nullptr,
        [](void*) -> void* {
          if (::unshare(CLONE_FILES) != 0) ::_exit(97);
          hold(gpu_file);
          signal_ready->signal();
          for (;;) ::pause();
        },
        nullptr);
    for (;;) ::pause();
  });
  ready.wait();
  FakeNvml nvml(one_gpu(json::array()));
  FakeNvidiaSmi smi;
  auto env = nvml.env();
  env.push_back(smi.path_env());
  auto r = run_gpureap({"reset", "--gpu", "0", "--yes", "--dev-root", dev.path()}, env);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("  PID " + std::to_string(job.pid()) + " ("), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("  end it first: gpureap kill " + std::to_string(job.pid()) + "\n"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(smi.args(), "");  // never ran
}

// The GPU file was opened by a process that passed it over a Unix socket and exited: the one
// that received it holds it now, and blocks the reset; the opener, gone, is no one.
TEST(ResetGuard, AFilePassedOverAUnixSocketBlocksTheResetInItsReceiver) {
  REQUIRE_DOUBLE();
  FakeDevRoot dev;
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  Ready ready;
  Child receiver([&] {
    ::close(sv[0]);
    char byte;
    char control[CMSG_SPACE(sizeof(int))] = {};
    iovec iov{&byte, 1};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    if (::recvmsg(sv[1], &msg, 0) != 1) ::_exit(95);
    ::close(sv[1]);
    ready.signal();
  });
  {
    Child opener([&] {
      int fd = hold(dev.dev("nvidia0"));
      char byte = 'x';
      char control[CMSG_SPACE(sizeof(int))] = {};
      iovec iov{&byte, 1};
      msghdr msg{};
      msg.msg_iov = &iov;
      msg.msg_iovlen = 1;
      msg.msg_control = control;
      msg.msg_controllen = sizeof control;
      cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int));
      std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
      if (::sendmsg(sv[0], &msg, 0) != 1) ::_exit(94);
      ::_exit(0);
    });
    ::close(sv[0]);
    ::close(sv[1]);
    ready.wait();
    opener.kill_and_reap();
  }
  FakeNvml nvml(one_gpu(json::array()));
  FakeNvidiaSmi smi;
  auto env = nvml.env();
  env.push_back(smi.path_env());
  auto r = run_gpureap({"reset", "--gpu", "0", "--yes", "--dev-root", dev.path()}, env);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("gpureap: refusing to reset GPU 0: this process uses it, and a reset "
                       "would end it:\n  PID " +
                       std::to_string(receiver.pid()) + " ("),
            std::string::npos)
      << r.err;
  EXPECT_EQ(smi.args(), "");  // never ran
}

// A paused job (SIGSTOP) holds the GPU for as long as it is paused: the refusal names it, and
// says to resume or end it first.
TEST(ResetGuard, APausedJobBlocksTheResetAndIsNamedAsPaused) {
  REQUIRE_DOUBLE();
  FakeDevRoot dev;
  Child job = holding(dev, "nvidia0");
  ::kill(job.pid(), SIGSTOP);
  ASSERT_TRUE(wait_for_state(job.pid(), 'T'));
  FakeNvml nvml(one_gpu(json::array({{{"pid", job.pid()}, {"used_bytes", 2 * GiB}}})));
  FakeNvidiaSmi smi;
  auto env = nvml.env();
  env.push_back(smi.path_env());
  auto r = run_gpureap({"reset", "--gpu", "0", "--yes", "--dev-root", dev.path()}, env);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("  reset is blocked by paused PID " + std::to_string(job.pid()) +
                       "; resume or end it first\n"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(smi.args(), "");            // never ran
  EXPECT_EQ(state_of(job.pid()), 'T');  // left paused
}

// --- nvidia-drm: the DRM nodes of an NVIDIA GPU --------------------------------------------

// A sysfs tree as the kernel lays it out for GPUs and their DRM nodes: class/drm/card<N> and
// renderD<N> link to devices/pci0000:00/<root port>/<address>/drm/<node>, whose `dev` is
// "226:<minor>" and whose `device` links back to the PCI function; the function's `driver`
// links to bus/pci/drivers/<driver>. With nvidia-drm loaded (modeset=1) an NVIDIA GPU's
// function is bound to `nvidia` and has a card and a render node. Each node's stand-in is made
// under the dev root too.
class DrmSys {
 public:
  explicit DrmSys(const FakeDevRoot& dev) : dev_(dev) {
    sys_.write("class/drm/version", "drm 1.1.0 20060810\n");
  }
  const std::string& path() const { return sys_.root(); }

  void nvidia_gpu(const std::string& address, unsigned card, unsigned render) const {
    test::PciGpu g;
    g.address = address;
    g.driver = "nvidia";
    g.vendor = "0x10de";
    g.device = "0x2335";  // H200
    g.subsystem_vendor = "0x10de";
    g.subsystem_device = "0x18be";
    g.pci_class = "0x030200";
    g.bridge = root_port(address);
    add(g, card, render);
  }
  // An Intel iGPU (i915) on the root bus, as laptops and workstations have beside the NVIDIA GPU.
  void intel_gpu(const std::string& address, unsigned card, unsigned render) const {
    test::PciGpu g;
    g.address = address;
    g.driver = "i915";
    g.vendor = "0x8086";
    g.device = "0xa780";
    add(g, card, render);
  }

 private:
  // The root port above a discrete GPU: bus 0, the GPU's bus number as its device.
  static std::string root_port(const std::string& address) {
    return "0000:00:" + address.substr(5, 2) + ".0";
  }
  void add(test::PciGpu& g, unsigned card, unsigned render) const {
    g.nodes = {{"card" + std::to_string(card), card}, {"renderD" + std::to_string(render), render}};
    test::add_pci_gpu(sys_, g, test::Layout::Symlinks);
    for (const auto& [node, minor] : g.nodes)
      std::ofstream(dev_.dev("dri/" + node)) << "stand-in\n";
  }

  const FakeDevRoot& dev_;
  test::SysTree sys_;
};

// Two NVIDIA GPUs (minors 0 and 1), nothing listed.
json two_gpus() {
  auto gpus = one_gpu(json::array());
  json second = gpus["gpus"][0];
  second["uuid"] = "GPU-0001";
  second["pci_bus_id"] = "00000000:65:00.0";
  second["minor"] = 1;
  gpus["gpus"].push_back(second);
  return gpus;
}

// A compositor, an EGL or GBM client, a process that kept only that fd: it holds the render
// node nvidia-drm gave GPU 0 and no /dev/nvidia<N>, and NVML lists it nowhere. A reset would
// end its work: it is refused, the holder named with the command that ends it, and the reset
// tool never runs.
TEST(ResetGuard, AProcessHoldingOnlyTheGpusRenderNodeBlocksTheReset) {
  REQUIRE_DOUBLE();
  FakeDevRoot dev;
  DrmSys sys(dev);
  sys.nvidia_gpu("0000:17:00.0", 1, 128);
  Child client = holding(dev, "dri/renderD128");
  FakeNvml nvml(one_gpu(json::array(), 3 * GiB));
  FakeNvidiaSmi smi;
  auto env = nvml.env();
  env.push_back(smi.path_env());
  auto r = run_gpureap(
      {"reset", "--gpu", "0", "--yes", "--dev-root", dev.path(), "--sys-root", sys.path()}, env);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(r.out, "");
  const std::string pid = std::to_string(client.pid());
  EXPECT_NE(r.err.find("gpureap: refusing to reset GPU 0: this process uses it, and a reset "
                       "would end it:\n  PID " +
                       pid + " ("),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("holds " + dev.dev("dri/renderD128") + " on fd"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("  end it first: gpureap kill " + pid + "\n"), std::string::npos) << r.err;
  EXPECT_EQ(smi.args(), "");  // never ran
  EXPECT_TRUE(is_alive(client.pid()));

  // The same holder is GPU 0's in every view: `ps --gpu 0` shows it, with no memory of its own.
  auto j =
      run_json({"ps", "--json", "--gpu", "0", "--dev-root", dev.path(), "--sys-root", sys.path()},
               nvml.env());
  auto row = row_of(j, client.pid());
  ASSERT_FALSE(row.is_null()) << j.dump(2);
  EXPECT_EQ(row["listed_by_driver"], false);
  EXPECT_EQ(row["devices"][0]["device"], "226:128");
  ASSERT_EQ(j["gpus"].size(), 1u);
  EXPECT_EQ(j["gpus"][0]["device_numbers"], (json{"195:0", "226:1", "226:128"}));
}

// The check made again after the answer: a client opened only the card node of GPU 0 while
// gpureap asked. The reset is refused and the client named.
TEST(ResetGuard, AClientThatOpensTheGpusCardNodeWhileGpureapAsksBlocksTheReset) {
  REQUIRE_TERMINAL();
  if (::geteuid() != 0) GTEST_SKIP() << "a reset asks only as root";
  FakeDevRoot dev;
  DrmSys sys(dev);
  sys.nvidia_gpu("0000:17:00.0", 1, 128);
  expect_an_opener_while_asked_blocks_the_reset(dev, "dri/card1", {"--sys-root", sys.path()});
}

// What must be left alone: the DRM nodes of another GPU. On a machine with an Intel iGPU
// (card0, renderD128) and two NVIDIA GPUs (card1 and renderD129, card2 and renderD130), a
// client of GPU 1's render node and one of the iGPU's nodes do not block a reset of GPU 0; the
// first blocks GPU 1's, the second does not.
TEST(ResetGuard, TheDrmNodesOfOtherGpusDoNotBlockTheReset) {
  REQUIRE_DOUBLE();
  FakeDevRoot dev;
  DrmSys sys(dev);
  sys.intel_gpu("0000:00:02.0", 0, 128);
  sys.nvidia_gpu("0000:17:00.0", 1, 129);
  sys.nvidia_gpu("0000:65:00.0", 2, 130);
  Child gpu1_client = holding(dev, "dri/renderD130");
  Ready ready;
  Child igpu_client([&] {
    hold(dev.dev("dri/card0"));
    hold(dev.dev("dri/renderD128"));
    ready.signal();
  });
  ready.wait();
  FakeNvml nvml(two_gpus());
  FakeNvidiaSmi smi;
  auto env = nvml.env();
  env.push_back(smi.path_env());
  auto reset = [&](const std::string& gpu) {
    return run_gpureap(
        {"reset", "--gpu", gpu, "--dry-run", "--dev-root", dev.path(), "--sys-root", sys.path()},
        env);
  };
  auto r = reset("0");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("nothing holds it. Would run: nvidia-smi --gpu-reset -i 0"),
            std::string::npos)
      << r.out << r.err;
  EXPECT_EQ(r.err.find("refusing"), std::string::npos) << r.err;

  r = reset("1");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("refusing to reset GPU 1: this process uses it, and a reset would end "
                       "it:\n  PID " +
                       std::to_string(gpu1_client.pid()) + " ("),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("holds " + dev.dev("dri/renderD130")), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("PID " + std::to_string(igpu_client.pid())), std::string::npos) << r.err;
  EXPECT_EQ(smi.args(), "");  // a dry run runs nothing
  EXPECT_TRUE(is_alive(gpu1_client.pid()));
  EXPECT_TRUE(is_alive(igpu_client.pid()));
}

// A render node keeps none of the contexts NVML lists: those live on /dev/nvidia<N>. A gone
// trainer that opened only GPU 0's render node, its worker still holding it: the worker is no
// keeper of the trainer's listed memory, so `kill --ghosts` plans nothing, but it uses the GPU
// and blocks the reset.
TEST(ResetGuard, AWorkerHoldingOnlyTheRenderNodeKeepsNoGhostButBlocksTheReset) {
  REQUIRE_DOUBLE();
  FakeDevRoot dev;
  DrmSys sys(dev);
  sys.nvidia_gpu("0000:17:00.0", 1, 128);
  auto job = gone_trainer(dev, "dri/renderD128");
  // Listed whatever holds what: the context NVML lists is not on the render node.
  FakeNvml nvml(
      one_gpu(json::array({{{"pid", job->trainer}, {"used_bytes", 4 * GiB}, {"leaked", true}}})));
  FakeNvidiaSmi smi;
  auto env = nvml.env();
  env.push_back(smi.path_env());
  // Whatever its exit status, the plan says what it chose.
  auto plan = parse_output(run_gpureap({"kill", "--ghosts", "--json", "--dry-run", "--dev-root",
                                        dev.path(), "--sys-root", sys.path()},
                                       env));
  EXPECT_EQ(planned_pids(plan), std::vector<pid_t>{}) << plan.dump(2);
  ASSERT_EQ(plan["plan"]["gone"].size(), 1u) << plan.dump(2);
  EXPECT_EQ(plan["plan"]["gone"][0]["pid"], job->trainer);
  EXPECT_EQ(plan["plan"]["gone"][0]["keepers"], json::array());
  // The note names the worker as a holder of the display nodes alone, not "no process".
  EXPECT_EQ(plan["plan"]["notes"],
            json::array({"PID " + std::to_string(job->trainer) +
                         " is gone and no process holds a file of its GPU that can keep its "
                         "context; PID " +
                         std::to_string(job->worker) +
                         " holds only its display nodes: a leaked context; only a GPU reset "
                         "frees it, and `gpureap reset` says what it needs ended"}))
      << plan.dump(2);
  auto r = run_gpureap(
      {"reset", "--gpu", "0", "--yes", "--dev-root", dev.path(), "--sys-root", sys.path()}, env);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("  PID " + std::to_string(job->worker) + " (loader-worker): holds " +
                       dev.dev("dri/renderD128")),
            std::string::npos)
      << r.err;
  EXPECT_EQ(smi.args(), "");  // never ran
  EXPECT_TRUE(is_alive(job->worker));
}

}  // namespace reset_guard
}  // namespace
}  // namespace gpureap::testing

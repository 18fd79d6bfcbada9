// The holder scan with the kernel's open-file iterator (collect/kernel_fd_index.h) against the
// scan that reads every fd table through /proc: real processes holding stand-in device files,
// and those that must not be taken for holders. Where this machine cannot load the iterator
// (not root, no BTF, a kernel before 5.8), the test says why and skips.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

#include "support.h"

namespace gpureap::testing {
namespace {

// The line GPUREAP_TIMING prints where the iterator could not be loaded, else empty.
std::string unavailable(const std::string& err) {
  auto at = err.find("kernel open-file iterator unavailable");
  return at == std::string::npos ? "" : err.substr(at, err.find('\n', at) - at);
}

// The rows of a ps --json answer that the two scans must agree on: each process's PID and
// the GPU files it holds, on which fds.
std::vector<std::string> holdings(const nlohmann::json& snap) {
  std::vector<std::string> out;
  for (const auto& p : snap["processes"])
    out.push_back(std::to_string(p["pid"].get<pid_t>()) + " " + p["devices"].dump());
  std::sort(out.begin(), out.end());
  return out;
}

// Holders of every kind the scan meets, and processes it must leave out.
struct Scene {
  FakeDevRoot dev;
  TempDir elsewhere;  // a file named like a GPU file outside the dev root
  Ready parent_ready, path_ready, named_ready;
  Child parent{[this] {
    hold(dev.dev("nvidia0"));
    hold(dev.dev("nvidia-uvm"));
    // A worker that inherits the fds, as a DataLoader worker does.
    pid_t worker = ::fork();
    if (worker == 0)
      for (;;) ::pause();
    parent_ready.send(worker);
  }};
  Child path_only{[this] {
    // O_PATH names the file and opens nothing: not a holder.
    if (::open(dev.dev("nvidia1").c_str(), O_PATH) < 0) ::_exit(98);
    path_ready.signal();
  }};
  Child same_name{[this] {
    std::ofstream(elsewhere.file("nvidia0")) << "not a GPU\n";
    hold(elsewhere.file("nvidia0"));
    named_ready.signal();
  }};
  Child stopped = holding(dev, "nvidiactl");
  KillStrays strays;  // the worker
  Scene() {
    strays.pids.push_back(static_cast<pid_t>(parent_ready.receive()));
    path_ready.wait();
    named_ready.wait();
    ::kill(stopped.pid(), SIGSTOP);
  }
  ~Scene() { ::kill(stopped.pid(), SIGCONT); }
};

TEST(KernelOpenFiles, PsFindsTheSameHoldersWithTheIteratorAsThroughProc) {
  if (::geteuid() != 0) GTEST_SKIP() << "loading the iterator needs root";
  Scene scene;
  const std::vector<std::string> args = {"ps", "--json", "--dev-root", scene.dev.path()};
  auto through_proc = run_gpureap(args, {"GPUREAP_BPF=0", "GPUREAP_TIMING=1"});
  auto with_kernel = run_gpureap(args, {"GPUREAP_TIMING=1"});
  ASSERT_EQ(through_proc.exit_code, 0) << through_proc.err;
  ASSERT_EQ(with_kernel.exit_code, 0) << with_kernel.err;
  // Each answer came the way it was asked for; as root the iterator is always tried.
  EXPECT_EQ(through_proc.err.find("kernel open-file"), std::string::npos) << through_proc.err;
  if (auto why = unavailable(with_kernel.err); !why.empty()) GTEST_SKIP() << why;
  EXPECT_NE(with_kernel.err.find("kernel open-file pass"), std::string::npos) << with_kernel.err;

  auto a = nlohmann::json::parse(through_proc.out), b = nlohmann::json::parse(with_kernel.out);
  EXPECT_EQ(holdings(a), holdings(b));
  // And both are right: the parent, its worker and the stopped holder, nobody else.
  const pid_t worker = scene.strays.pids[0];
  std::vector<pid_t> pids;
  for (const auto& p : b["processes"]) pids.push_back(p["pid"].get<pid_t>());
  std::sort(pids.begin(), pids.end());
  ASSERT_EQ(pids.size(), 3u) << b["processes"].dump();
  EXPECT_TRUE(std::count(pids.begin(), pids.end(), scene.parent.pid()));
  EXPECT_TRUE(std::count(pids.begin(), pids.end(), worker));
  EXPECT_TRUE(std::count(pids.begin(), pids.end(), scene.stopped.pid()));
  EXPECT_FALSE(std::count(pids.begin(), pids.end(), scene.path_only.pid()));
  EXPECT_FALSE(std::count(pids.begin(), pids.end(), scene.same_name.pid()));
  EXPECT_EQ(a["complete"], b["complete"]);
  EXPECT_EQ(a["uninspectable_processes"], b["uninspectable_processes"]);
}

}  // namespace
}  // namespace gpureap::testing

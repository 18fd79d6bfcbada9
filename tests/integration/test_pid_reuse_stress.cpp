// PID reuse at scale: inside a PID namespace of its own, hundreds of short-lived holders cycle
// through the same few PIDs (ns_last_pid) while bystanders — processes that hold nothing and
// block every signal — take PIDs the holders just left. `gpureap kill --gpu 0` runs again
// and again, and a daemon's cleanup policy acts on the holders; no bystander ever receives a
// signal (a blocked one would stay pending, SIGKILL would end it).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <set>
#include <thread>

#include "support.h"

namespace gpureap::testing {
namespace {

constexpr int kBystanderSignalled = 1;
constexpr int kChurnFailed = 2;
// The daemon's policy acts this many times on the churn's holders before it stops: a few
// seconds' worth on an idle machine.
constexpr size_t kPolicyActions = 300;

// The churn: holders and bystanders, forked at PIDs just freed. Stops when `stop` is readable;
// then writes the bystanders' PIDs to `report`, one per line (whole: written beside it, then
// renamed), and waits to be killed.
[[noreturn]] void churn(const std::string& device, int stop, const std::string& report) {
  ::prctl(PR_SET_NAME, "churn");
  std::mt19937 rng(42);
  std::vector<pid_t> bystanders;
  std::set<pid_t> holders;
  ::fcntl(stop, F_SETFL, O_NONBLOCK);
  for (unsigned round = 0;; ++round) {
    char c;
    if (::read(stop, &c, 1) == 1 || round > 200000) break;
    while (true) {  // reap what has ended
      pid_t done = ::waitpid(-1, nullptr, WNOHANG);
      if (done <= 0) break;
      holders.erase(done);
    }
    if (holders.size() > 40) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      continue;
    }
    // Hand out the low PIDs again and again.
    if (rng() % 2 == 0) std::ofstream("/proc/sys/kernel/ns_last_pid") << 10 + rng() % 50;
    bool bystander = bystanders.size() < 150 && rng() % 5 == 0;
    pid_t pid = ::fork();
    if (pid == 0) {
      if (bystander) {
        block_all_signals();
        ::prctl(PR_SET_NAME, "bystander");
        for (;;) ::pause();
      }
      ::prctl(PR_SET_NAME, "churn-holder");
      hold(device);
      std::this_thread::sleep_for(std::chrono::milliseconds(1 + getpid() % 20));
      ::_exit(0);
    }
    if (pid < 0) continue;
    if (bystander)
      bystanders.push_back(pid);
    else
      holders.insert(pid);
  }
  std::ofstream out(report + ".part");
  for (pid_t b : bystanders) out << b << "\n";
  out.close();
  std::rename((report + ".part").c_str(), report.c_str());
  for (;;) ::pause();
}

int pid_reuse_init(const std::string& dev_root, const std::string& work) {
  int stop[2];
  if (::pipe(stop) != 0) return kChurnFailed;
  pid_t churner = ::fork();
  if (churner == 0) {
    ::close(stop[1]);
    churn(dev_root + "/nvidia0", stop[0], work + "/bystanders");
  }
  ::close(stop[0]);

  // `kill` again and again: every holder of GPU 0's file, ended.
  int acted = 0;
  FakeNvml idle(idle_gpus());  // --gpu 0 is mapped to its device file by a driver
  for (int i = 0; i < 25; ++i) {
    auto r = run_gpureap({"kill", "--gpu", "0", "--yes", "--grace", "50ms", "--wait-release", "0s",
                          "--dev-root", dev_root},
                         idle.env());
    acted += r.exit_code != 3;  // 3: nothing matched
  }
  std::ofstream(work + "/kills") << acted;

  // A daemon whose enforced policy kills every holder it sees.
  std::ofstream(work + "/config.toml")
      << "interval = \"100ms\"\nholder_scan_interval = \"100ms\"\n"
      << "full_scan_interval = \"100ms\"\nenforce = true\n"
      << "audit_log = \"" << work << "/audit.jsonl\"\n"
      << "[[policy]]\nname = \"holders\"\ncommand = \"churn-holder\"\n"
      << "action = \"kill\"\n";
  {
    DaemonProcess d({"--config", work + "/config.toml", "--dev-root", dev_root, "--nvml-library",
                     "/nonexistent/libnvidia-ml.so.1"});
    // It acts on the churn a number of times, however long a loaded machine takes for them.
    const auto actions = [&] {
      size_t n = 0;
      // The daemon may be writing the last line: one cut short is no record yet.
      for (const auto& r : read_json_lines(work + "/audit.jsonl"))
        n += r.is_object() && r["event"] == "action";
      return n;
    };
    wait_until([&] { return actions() >= kPolicyActions; }, 120000);
    d.signal(SIGTERM);
    d.wait_exit();
  }

  (void)!::write(stop[1], "x", 1);
  if (!wait_for_file(work + "/bystanders")) return kChurnFailed;
  std::ifstream in(work + "/bystanders");
  int code = 0;
  size_t n = 0;
  for (pid_t b; in >> b; ++n)
    if (!is_alive(b) || proc_status_field(b, "SigPnd") != "0000000000000000" ||
        proc_status_field(b, "ShdPnd") != "0000000000000000") {
      std::ofstream(work + "/signalled", std::ios::app) << b << "\n";
      code = kBystanderSignalled;
    }
  std::ofstream(work + "/count") << n;
  ::kill(churner, SIGKILL);
  return code;
}

TEST(PidReuseStress, NoProcessOutsideThePlanEverReceivesASignal) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root for a PID namespace and ns_last_pid";
  FakeDevRoot dev;
  TempDir work;
  int code = run_in_new_pid_namespace([&] { return pid_reuse_init(dev.path(), work.path()); });
  if (code == kNoPidNamespace) GTEST_SKIP() << "PID namespaces are not available here";
  ASSERT_NE(code, kChurnFailed);
  EXPECT_GT(std::stoul(read_text(work.file("count")).empty() ? "0" : read_text(work.file("count"))),
            20u)
      << "too few bystanders to mean anything";
  EXPECT_EQ(code, 0) << "signalled bystanders: " << read_text(work.file("signalled"));
  // The holders were really acted on, by `kill` and by the policy.
  EXPECT_GT(std::stoi("0" + read_text(work.file("kills"))), 0);
  size_t actions = 0;
  for (const auto& r : read_json_lines(work.file("audit.jsonl")))
    actions += r.is_object() && r["event"] == "action";
  EXPECT_GE(actions, kPolicyActions) << read_text(work.file("audit.jsonl")).substr(0, 2000);
}

}  // namespace
}  // namespace gpureap::testing

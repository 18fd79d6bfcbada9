// Who holds a GPU, on the kernel's word only: a device file by its number, whatever name the
// holder's mount namespace gives it; an O_PATH fd opens nothing; a process lives while any of
// its threads does. Each scene asserts what ps shows, the whole kill plan, and doctor.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fstream>

#include "support.h"

namespace gpureap::testing {
namespace holder_evidence {

using nlohmann::json;

json scene(json gpu0_processes) {
  return {{"gpus",
           {{{"name", "NVIDIA H200"},
             {"uuid", "GPU-0000"},
             {"pci_bus_id", "00000000:17:00.0"},
             {"minor", 0},
             {"total_bytes", 80 * GiB},
             {"processes", gpu0_processes}},
            {{"name", "NVIDIA H200"},
             {"uuid", "GPU-1111"},
             {"pci_bus_id", "00000000:18:00.0"},
             {"minor", 1},
             {"total_bytes", 80 * GiB},
             {"processes", json::array()}}}}};
}

// The paths a row holds, in order.
std::vector<std::string> held_paths(const json& row) {
  std::vector<std::string> out;
  if (row.is_null()) return out;
  for (const auto& d : row["devices"]) out.push_back(d["path"].get<std::string>());
  return out;
}

json kill_plan(const FakeDevRoot& dev, const FakeNvml& nvml, std::vector<std::string> extra) {
  std::vector<std::string> a{"kill", "--json", "--dry-run", "--dev-root", dev.path()};
  a.insert(a.end(), extra.begin(), extra.end());
  return parse_output(run_gpureap(a, nvml.env()));
}

json doctor_of(const FakeDevRoot& dev, const FakeNvml& nvml) {
  return parse_output(
      run_gpureap({"doctor", "--json", "--dev-root", dev.path(), "--settle", "100ms"}, nvml.env()));
}

// ---- a. a bind mount under another name, in the holder's own mount namespace ----

constexpr long kNoNamespace = -1;

class BindMountedHolder : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_DOUBLE();
    std::ofstream(other_.file("checkpoint.bin")) << "an ordinary file in this namespace\n";
  }
  FakeDevRoot dev_;
  TempDir other_;
};

TEST_F(BindMountedHolder, IsTheHolderOfTheGpuFileWhateverItsName) {
  Ready ready;
  Child holder([&] {
    if (!cover_device_in_own_namespace(dev_.dev("nvidia0"), other_.file("checkpoint.bin"))) {
      ready.send(kNoNamespace);
      return;
    }
    // The link of this fd reads ".../checkpoint.bin": only its number says what it is.
    ::open(other_.file("checkpoint.bin").c_str(), O_RDWR);
    ready.send(0);
  });
  if (ready.receive() == kNoNamespace) GTEST_SKIP() << "no mount namespace can be made here";
  FakeNvml nvml(scene({{{"pid", holder.pid()}, {"used_bytes", 6 * GiB}}}));

  auto snap = run_json({"ps", "--json", "--dev-root", dev_.path()}, nvml.env());
  auto row = row_of(snap, holder.pid());
  ASSERT_FALSE(row.is_null()) << snap.dump(2);
  EXPECT_EQ(held_paths(row), std::vector<std::string>{dev_.dev("nvidia0")}) << row.dump(2);
  EXPECT_TRUE(anomalies(row).empty()) << row.dump(2);
  for (const auto& w : snap["warnings"])
    EXPECT_EQ(w.get<std::string>().find(std::to_string(holder.pid())), std::string::npos) << w;

  EXPECT_EQ(planned_pids(kill_plan(dev_, nvml, {"--gpu", "0"})), std::vector<pid_t>{holder.pid()});
  EXPECT_TRUE(planned_pids(kill_plan(dev_, nvml, {"--ghosts"})).empty());
  auto doc = doctor_of(dev_, nvml);
  for (const auto& f : doc["findings"]) EXPECT_EQ(f["severity"], "info") << f.dump(2);
}

TEST_F(BindMountedHolder, AWorkerThatInheritedTheFileKeepsTheGoneTrainersContext) {
  Ready ready;
  Child trainer([&] {
    ::setpgid(0, 0);
    if (!cover_device_in_own_namespace(dev_.dev("nvidia0"), other_.file("checkpoint.bin"))) {
      ready.send(kNoNamespace);
      ::_exit(0);
    }
    ::open(other_.file("checkpoint.bin").c_str(), O_RDWR);
    if (::fork() == 0) {
      ::prctl(PR_SET_NAME, "loader-worker");
      ready.send(::getpid());
      for (;;) ::pause();
    }
    ::_exit(0);
  });
  const pid_t gone = trainer.pid();
  const long worker_or_none = ready.receive();
  if (worker_or_none == kNoNamespace) GTEST_SKIP() << "no mount namespace can be made here";
  const pid_t worker = static_cast<pid_t>(worker_or_none);
  KillStrays strays{{worker}};
  trainer.kill_and_reap();
  FakeNvml nvml(scene({{{"pid", gone}, {"used_bytes", 8 * GiB}, {"holders", {worker}}}}));

  auto snap = run_json({"ps", "--json", "--dev-root", dev_.path()}, nvml.env());
  ASSERT_EQ(snap["open_files"], "exact") << snap.dump(2);
  auto ghost = row_of(snap, gone);
  ASSERT_FALSE(ghost.is_null()) << snap.dump(2);
  EXPECT_EQ(pids(ghost["ghost"]["keepers"]), std::vector<pid_t>{worker}) << ghost.dump(2);
  EXPECT_EQ(ghost["ghost"]["leaked"], false) << ghost.dump(2);
  auto keeper = row_of(snap, worker);
  EXPECT_EQ(held_paths(keeper), std::vector<std::string>{dev_.dev("nvidia0")}) << keeper.dump(2);
  EXPECT_EQ(pids(keeper["keeps"]), std::vector<pid_t>{gone}) << keeper.dump(2);

  auto text = run_gpureap({"ps", "--dev-root", dev_.path(), "--no-color"}, nvml.env());
  EXPECT_EQ(text.out.find("leaked"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("gpureap reset"), std::string::npos) << text.out;

  EXPECT_EQ(planned_pids(kill_plan(dev_, nvml, {"--ghosts"})), std::vector<pid_t>{worker});
  auto doc = doctor_of(dev_, nvml);
  const auto* f = finding(doc, "no-such-process");
  ASSERT_NE(f, nullptr) << doc["findings"].dump(2);
  EXPECT_EQ(pids((*f)["pids"]), (std::vector<pid_t>{gone, worker})) << f->dump(2);
  EXPECT_EQ(finding(doc, "leaked"), nullptr) << doc["findings"].dump(2);
}

// ---- b. an O_PATH descriptor ----

TEST(OPathHolder, AnOPathFdOnTheGpuFileHoldsNothingAndBlocksNoReset) {
  REQUIRE_DOUBLE();
  if (::geteuid() != 0) GTEST_SKIP() << "a reset needs root";
  FakeDevRoot dev;
  Ready ready;
  Child looker([&] {
    // Names the GPU file, opens nothing: no driver open, no context (open(2), O_PATH).
    if (::open(dev.dev("nvidia0").c_str(), O_PATH) < 0) ::_exit(1);
    ready.signal();
  });
  ready.wait();
  FakeNvml nvml(scene(json::array()));
  FakeNvidiaSmi smi;
  auto env = nvml.env();
  env.push_back(smi.path_env());

  auto snap = run_json({"ps", "--json", "--dev-root", dev.path()}, env);
  EXPECT_TRUE(held_paths(row_of(snap, looker.pid())).empty()) << snap.dump(2);
  auto reset = run_gpureap({"reset", "--gpu", "0", "--dry-run", "--dev-root", dev.path()}, env);
  EXPECT_EQ(reset.exit_code, 0) << reset.err;
  EXPECT_EQ(reset.err.find(std::to_string(looker.pid())), std::string::npos) << reset.err;
  EXPECT_TRUE(planned_pids(parse_output(run_gpureap({"kill", "--json", "--dry-run", "--gpu", "0",
                                                     "--dev-root", dev.path()},
                                                    env)))
                  .empty());
}

// ---- c. a job whose main thread has exited ----

void* live_on(void*) {
  for (;;) ::pause();
}

TEST(ThreadedJob, AJobWhoseMainThreadExitedIsAliveNotAGhost) {
  REQUIRE_DOUBLE();
  FakeDevRoot dev;
  Ready ready;
  Child job([&] {
    ::setpgid(0, 0);
    hold(dev.dev("nvidia0"));
    if (::fork() == 0) {
      ::prctl(PR_SET_NAME, "pt_data_worker");
      ready.send(::getpid());
      for (;;) ::pause();
    }
    pthread_t t;
    if (::pthread_create(&t, nullptr, live_on, nullptr) != 0) ::_exit(1);
    // The main thread ends as pthread_exit() ends it, without its unwinding (which the test
    // framework would catch in this forked copy of it): the job runs on in its other thread.
    ::syscall(SYS_exit, 0);
  });
  const pid_t worker = static_cast<pid_t>(ready.receive());
  KillStrays strays{{worker}};
  // The kernel shows the exited leader as a zombie: the state to wait for.
  ASSERT_TRUE(wait_for_state(job.pid(), 'Z'));
  FakeNvml nvml(
      scene({{{"pid", job.pid()}, {"used_bytes", 12 * GiB}, {"holders", {job.pid(), worker}}}}));

  auto snap = run_json({"ps", "--json", "--dev-root", dev.path()}, nvml.env());
  auto row = row_of(snap, job.pid());
  ASSERT_FALSE(row.is_null()) << snap.dump(2);
  EXPECT_EQ(row["state"], "S") << row.dump(2);
  EXPECT_TRUE(anomalies(row).empty()) << row.dump(2);
  EXPECT_EQ(held_paths(row), std::vector<std::string>{dev.dev("nvidia0")}) << row.dump(2);
  EXPECT_TRUE(row["ghost"].is_null()) << row.dump(2);
  auto w = row_of(snap, worker);
  EXPECT_TRUE(anomalies(w).empty()) << w.dump(2);
  EXPECT_EQ(pids(w["shares_context_of"]), std::vector<pid_t>{job.pid()}) << w.dump(2);
  EXPECT_TRUE(w["keeps"].empty()) << w.dump(2);
  const auto& memory = snap["gpus"][0]["memory"];
  EXPECT_EQ(memory["attributed_bytes"], 12 * GiB) << memory.dump(2);
  EXPECT_EQ(memory["ghost_bytes"], 0) << memory.dump(2);

  auto text = run_gpureap({"ps", "--dev-root", dev.path(), "--no-color"}, nvml.env());
  EXPECT_EQ(text.out.find("gone"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("\nNo ghosts."), std::string::npos) << text.out;

  EXPECT_TRUE(planned_pids(kill_plan(dev, nvml, {"--ghosts"})).empty());
  auto doc = doctor_of(dev, nvml);
  EXPECT_EQ(finding(doc, "no-such-process"), nullptr) << doc["findings"].dump(2);
  for (const auto& f : doc["findings"]) EXPECT_EQ(f["severity"], "info") << f.dump(2);
}

}  // namespace holder_evidence
}  // namespace gpureap::testing

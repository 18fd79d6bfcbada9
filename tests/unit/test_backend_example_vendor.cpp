// A vendor that is not DRM (tests/vendor_example: /dev/examplegpu<N>, a major of its own) added
// by its folder and one registry line beside the built-in backends: the device catalogue finds
// its nodes from the entry's data, the join ties its holders and its ghost to its GPU, and `ps`,
// doctor and the metrics show them with its remedy. No file under src/ names it.
#include <fcntl.h>
#include <sys/sysmacros.h>

#include <algorithm>

#include "backend/backend_set.h"
#include "collect/collector.h"
#include "doctor/diagnose.h"
#include "example_backend.h"
#include "export/metrics.h"
#include "export/prometheus_text.h"
#include "fake_nvml_fixture.h"
#include "output/doctor_view.h"
#include "output/ps_view.h"
#include "reap/safety.h"

namespace gpureap::testing {
namespace {

// The major the example driver registered (as /proc/devices and sysfs would say).
constexpr unsigned kExampleMajor = 511;

class ExampleVendor : public FakeNvmlFixture {
 protected:
  void SetUp() override {
    FakeNvmlFixture::SetUp();
    dev_ = dir_ + "/dev";
    sys_ = dir_ + "/sys";
    std::filesystem::create_directories(dev_);
    for (const char* f : {"/nvidia0", "/nvidiactl", "/examplegpu0"})
      std::ofstream(dev_ + f) << "stand-in\n";
    // The driver's sysfs node gives /dev/examplegpu0's number.
    std::filesystem::create_directories(sys_ + "/class/examplegpu/examplegpu0");
    std::ofstream(sys_ + "/class/examplegpu/examplegpu0/dev") << kExampleMajor << ":0\n";
    write_scenario(
        {{"gpus", {{{"uuid", "GPU-0000"}, {"minor", 0}, {"processes", nlohmann::json::array()}}}}});
  }

  pid_t spawn_holding(const std::string& file) {
    pid_t child = fork();
    if (child == 0) {
      if (::open(file.c_str(), O_RDWR) < 0) _exit(1);
      for (;;) pause();
    }
    children_.push_back(child);
    return child;
  }

  // A trainer opens the node, forks a worker (who inherits the open file) and exits.
  std::pair<pid_t, pid_t> gone_trainer_with_worker() {
    int pipefd[2];
    EXPECT_EQ(pipe(pipefd), 0);
    pid_t trainer = fork();
    if (trainer == 0) {
      ::setpgid(0, 0);  // a job of its own, as a shell starts one: its worker is in its group
      int fd = ::open((dev_ + "/examplegpu0").c_str(), O_RDWR);
      if (fd < 0) _exit(1);
      pid_t worker = fork();
      if (worker == 0) {
        for (;;) pause();
      }
      if (write(pipefd[1], &worker, sizeof worker) != sizeof worker) _exit(1);
      _exit(0);
    }
    pid_t worker = 0;
    EXPECT_EQ(read(pipefd[0], &worker, sizeof worker), static_cast<ssize_t>(sizeof worker));
    close(pipefd[0]);
    close(pipefd[1]);
    EXPECT_EQ(waitpid(trainer, nullptr, 0), trainer);
    children_.push_back(worker);
    return {trainer, worker};
  }

  core::Snapshot collect(const backend::Registry& registry) {
    backend::BackendSettings settings;
    settings.dev_root = dev_;
    settings.sys_root = sys_;
    settings.libraries["nvml"] = fake_nvml_library();
    auto drivers = backend::BackendSet::make(registry, settings, {});
    auto collector = collect::Collector::open({"/proc", dev_, sys_}, drivers);
    EXPECT_TRUE(collector.ok()) << (collector.ok() ? "" : collector.error().text());
    return collector->collect();
  }

  std::string dev_, sys_;
};

TEST_F(ExampleVendor, ItsHoldersGhostAndRemedyShowInPsDoctorAndMetrics) {
  const pid_t holder = spawn_holding(dev_ + "/examplegpu0");
  auto [trainer, worker] = gone_trainer_with_worker();
  const dev_t node = ::makedev(kExampleMajor, 0);

  backend::Registry registry = backend::builtin_backends();
  registry.push_back(example_entry(node, {{holder, 1 * kGiB}, {trainer, 2 * kGiB}}));  // the line
  auto s = collect(registry);

  // The catalogue took the node from the entry's data: its kind, its number from sysfs.
  const auto* held = s.proc.find(holder);
  ASSERT_NE(held, nullptr);
  ASSERT_EQ(held->devices.size(), 1u);
  EXPECT_EQ(held->devices[0].kind, "examplegpu");
  EXPECT_EQ(held->devices[0].device, node);
  EXPECT_TRUE(held->devices[0].gpu_file);
  EXPECT_NE(
      std::find(s.proc.driver_device_files.begin(), s.proc.driver_device_files.end(), "example"),
      s.proc.driver_device_files.end());

  // Its GPU is numbered after NVIDIA's; the holder is attributed on it, the trainer is a ghost
  // kept by its worker.
  ASSERT_EQ(s.drivers.gpus.size(), 2u);
  const core::Gpu& gpu = s.drivers.gpus[1];
  EXPECT_EQ(gpu.vendor, "example");
  EXPECT_EQ(gpu.index, 1u);
  const auto* row = s.row(holder);
  ASSERT_NE(row, nullptr);
  ASSERT_EQ(row->gpus.size(), 1u);
  EXPECT_EQ(row->gpus[0].index, 1u);
  EXPECT_TRUE(row->anomalies.empty());
  const core::Ghost* ghost = s.ghost(trainer);
  ASSERT_NE(ghost, nullptr);
  EXPECT_EQ(ghost->gpus, std::vector<unsigned>{1});
  EXPECT_EQ(ghost->keepers, std::vector<pid_t>{worker});
  EXPECT_EQ(s.memory_summary(gpu).ghost_bytes, 2 * kGiB);
  EXPECT_EQ(s.memory_summary(gpu).attributed_bytes, 1 * kGiB);

  // ps: the GPU, its holder, the ghost and the command that frees it.
  auto ps = output::render_ps(s, output::Style(false), {false, std::nullopt});
  EXPECT_NE(ps.find("Example E1"), std::string::npos) << ps;
  EXPECT_NE(ps.find(std::to_string(holder)), std::string::npos) << ps;
  EXPECT_NE(ps.find(std::to_string(worker)), std::string::npos) << ps;
  EXPECT_NE(ps.find("`gpureap kill " + std::to_string(trainer) + "`"), std::string::npos) << ps;

  // doctor: the ghost on GPU 1, kept by the worker, with its remedy.
  doctor::DoctorInput in{s, s, {}, std::nullopt, reap::is_protected_process};
  in.backends = &registry;
  auto findings = doctor::diagnose(in);
  auto ghost_finding = std::find_if(findings.begin(), findings.end(), [&](const auto& f) {
    return f.code == doctor::FindingCode::NoSuchProcess && f.gpus == std::vector<unsigned>{1};
  });
  ASSERT_NE(ghost_finding, findings.end());
  EXPECT_NE(std::find(ghost_finding->pids.begin(), ghost_finding->pids.end(), worker),
            ghost_finding->pids.end());
  EXPECT_EQ(ghost_finding->remedy.at(0).command, "gpureap kill " + std::to_string(trainer));
  auto text = output::render_doctor(s, findings, output::Style(false));
  EXPECT_NE(text.find("gpureap kill " + std::to_string(trainer)), std::string::npos) << text;
  for (const auto& f : findings)
    EXPECT_EQ(std::find(f.pids.begin(), f.pids.end(), holder), f.pids.end())
        << doctor::to_string(f.code) << " names the healthy holder";

  // /metrics: its backend, its GPU and the ghost bytes on it.
  auto metrics = exporter::render(exporter::build_metrics({s, findings, {}, false}));
  EXPECT_NE(metrics.find("gpureap_backend_up{backend=\"example\",vendor=\"example\"} 1"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("gpureap_gpu_memory_ghost_bytes{gpu=\"1\",uuid=\"EX-0001\","),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("vendor=\"example\"} 2147483648"), std::string::npos) << metrics;
}

// Memory the example driver lists for a PID that is gone and that nothing alive keeps: only a
// reset frees it, and doctor words the reset as the entry says.
TEST_F(ExampleVendor, ALeakIsResetWithTheVendorsOwnCommand) {
  pid_t gone = fork();
  if (gone == 0) _exit(0);
  ASSERT_EQ(waitpid(gone, nullptr, 0), gone);
  const dev_t node = ::makedev(kExampleMajor, 0);
  backend::Registry registry = backend::builtin_backends();
  registry.push_back(example_entry(node, {{gone, 3 * kGiB}}));
  auto s = collect(registry);

  doctor::DoctorInput in{s, s, {}, std::nullopt, reap::is_protected_process};
  in.backends = &registry;
  auto findings = doctor::diagnose(in);
  bool worded = false;
  for (const auto& f : findings)
    for (const auto& step : f.remedy) worded = worded || step.command == "example-smi --reset 1";
  EXPECT_TRUE(worded) << output::render_doctor(s, findings, output::Style(false));
}

// The node's major from /proc/devices, where the driver registered its name.
TEST(ExampleVendorNodes, MajorFromProcDevicesAndNamesByNumber) {
  std::string root = ::testing::TempDir() + "/example-nodes-" + std::to_string(getpid());
  std::filesystem::create_directories(root + "/dev");
  std::filesystem::create_directories(root + "/proc");
  std::ofstream(root + "/proc/devices") << "Character devices:\n  1 mem\n511 examplegpu\n";
  std::ofstream(root + "/dev/examplegpu3") << "stand-in\n";
  std::ofstream(root + "/dev/examplegpuX") << "decoy\n";
  backend::Registry registry{example_entry(::makedev(kExampleMajor, 3), {})};
  auto cat = procfs::DeviceCatalog::enumerate(backend::device_nodes(registry), root + "/dev",
                                              root + "/proc", root + "/sys");
  ASSERT_TRUE(cat.ok());
  ASSERT_EQ(cat->files().size(), 1u);
  EXPECT_EQ(cat->files()[0].kind, "examplegpu");
  EXPECT_EQ(cat->files()[0].minor, 3u);
  EXPECT_EQ(cat->files()[0].number(), ::makedev(kExampleMajor, 3));
  EXPECT_TRUE(cat->files()[0].reaches_gpus());
  EXPECT_TRUE(cat->may_match("/dev/examplegpu7"));
  EXPECT_FALSE(cat->may_match("/dev/nvidia0"));  // the built-in nodes are not in this one
  EXPECT_EQ(cat->drivers_present(), std::vector<std::string>{"example"});
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace gpureap::testing

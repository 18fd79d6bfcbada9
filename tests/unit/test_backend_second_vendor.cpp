// A second vendor's backend (tests/second_backend) registered beside NVML: its GPU goes through
// the same holder scan, join, ghost verdict, doctor and metrics as an NVIDIA one, tied to its
// holders by device number alone, and numbered after the NVIDIA GPUs.
#include <fcntl.h>
#include <sys/sysmacros.h>

#include <algorithm>

#include "acme_backend.h"
#include "backend/backend_set.h"
#include "collect/collector.h"
#include "doctor/diagnose.h"
#include "doctor/reset_remedy.h"
#include "export/metrics.h"
#include "export/prometheus_text.h"
#include "fake_nvml_fixture.h"
#include "kernel/gpu_events.h"
#include "output/kernel_note.h"
#include "output/snapshot_json.h"
#include "reap/planner.h"
#include "reap/safety.h"

namespace gpureap::testing {
namespace {

constexpr unsigned kRenderMinor = 128;

class SecondVendor : public FakeNvmlFixture {
 protected:
  void SetUp() override {
    FakeNvmlFixture::SetUp();
    dev_ = dir_ + "/dev";
    std::filesystem::create_directories(dev_ + "/dri");
    for (const char* f : {"/nvidia0", "/nvidiactl", "/dri/renderD128"})
      std::ofstream(dev_ + f) << "stand-in\n";
  }

  // A child that opens a device file and sleeps.
  pid_t spawn_holding(const std::string& file) {
    pid_t child = fork();
    if (child == 0) {
      if (::open(file.c_str(), O_RDWR) < 0) _exit(1);
      for (;;) pause();
    }
    children_.push_back(child);
    return child;
  }

  // A trainer that opens the render node, forks a worker (who inherits the open file) and
  // exits: its PID is gone, the worker keeps its context. Returns {trainer, worker}.
  std::pair<pid_t, pid_t> gone_trainer_with_worker() {
    int pipefd[2];
    EXPECT_EQ(pipe(pipefd), 0);
    pid_t trainer = fork();
    if (trainer == 0) {
      ::setpgid(0, 0);  // a job of its own, as a shell starts one: its worker is in its group
      int fd = ::open((dev_ + "/dri/renderD128").c_str(), O_RDWR);
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
    children_.push_back(worker);  // killed at teardown (reparented, so not reaped here)
    return {trainer, worker};
  }

  core::Snapshot collect_with_acme(std::vector<AcmeListing> listings) {
    registry = backend::builtin_backends();
    registry.push_back(acme_entry(kRenderMinor, std::move(listings)));  // the one line
    backend::BackendSettings settings;
    settings.dev_root = dev_;
    settings.sys_root = dir_ + "/sys";  // no DRM GPU: the built-in AMD and Intel have none
    settings.libraries["nvml"] = fake_nvml_library();
    auto drivers = backend::BackendSet::make(registry, settings, {});
    auto collector = collect::Collector::open({"/proc", dev_}, drivers);
    EXPECT_TRUE(collector.ok());
    return collector->collect();
  }

  std::string dev_;
  backend::Registry registry;  // the last collect_with_acme's: the built-in ones and Acme
};

// NVML's GPU 0 (minor 0) with one job on it.
nlohmann::json one_nvidia_job(pid_t job) {
  return {{"gpus",
           {{{"uuid", "GPU-0000"},
             {"minor", 0},
             {"processes", {{{"pid", job}, {"used_bytes", 4 * kGiB}}}}}}}};
}

const core::ProcessRow* row_of(const core::Snapshot& s, pid_t pid) {
  return s.row(pid);
}

TEST_F(SecondVendor, ItsGhostIsFoundJoinedDiagnosedAndExported) {
  const pid_t nvidia_job = spawn_holding(dev_ + "/nvidia0");
  auto [trainer, worker] = gone_trainer_with_worker();
  write_scenario(one_nvidia_job(nvidia_job));

  auto s = collect_with_acme({{trainer, 2 * kGiB}});

  // The built-in backends and Acme; the AMD and Intel ones have no GPU here (not down). GPUs
  // are numbered NVIDIA first, then the registry's next.
  ASSERT_EQ(s.drivers.backends.size(), 4u);
  EXPECT_EQ(s.drivers.backends[0].name, "nvml");
  EXPECT_EQ(s.drivers.backends[1].name, "amdgpu");
  EXPECT_EQ(s.drivers.backends[2].name, "intel");
  EXPECT_EQ(s.drivers.backends[3].name, "acme");
  EXPECT_TRUE(s.drivers.backends[0].available);
  EXPECT_EQ(s.drivers.backends[1].error_code, core::BackendErrorCode::NoDevice);
  EXPECT_EQ(s.drivers.backends[2].error_code, core::BackendErrorCode::NoDevice);
  EXPECT_TRUE(s.drivers.backends[3].available);
  ASSERT_EQ(s.drivers.gpus.size(), 2u);
  const core::Gpu& nvidia = s.drivers.gpus[0];
  const core::Gpu& acme = s.drivers.gpus[1];
  EXPECT_EQ(nvidia.index, 0u);
  EXPECT_EQ(nvidia.vendor, "nvidia");
  EXPECT_EQ(nvidia.key, "nvidia:GPU-0000");
  EXPECT_EQ(acme.index, 1u);
  EXPECT_EQ(acme.backend_index, 0u);
  EXPECT_EQ(acme.vendor, "acme");
  EXPECT_EQ(acme.key, "acme:pci:0000:c1:00.0");
  EXPECT_EQ(acme.device_numbers, std::vector<dev_t>{::makedev(226, kRenderMinor)});

  // The backend took part in the holder scan: it saw the worker's render fd and its fdinfo.
  ASSERT_NE(s.drivers.backends[3].detail("acme_render_holders"), nullptr);
  EXPECT_EQ(*s.drivers.backends[3].detail("acme_render_holders"), "1");
  EXPECT_EQ(*s.drivers.backends[3].detail("acme_fdinfo_read"), "1");

  // The join: the NVIDIA job is attributed on GPU 0 and healthy; the trainer is a ghost on
  // GPU 1 kept by its worker, compared exactly (kcmp); nothing else is a row.
  const auto* job = row_of(s, nvidia_job);
  ASSERT_NE(job, nullptr);
  ASSERT_EQ(job->gpus.size(), 1u);
  EXPECT_EQ(job->gpus[0].index, 0u);
  EXPECT_TRUE(job->anomalies.empty());
  const auto* gone = row_of(s, trainer);
  ASSERT_NE(gone, nullptr);
  EXPECT_FALSE(gone->process.has_value());
  ASSERT_EQ(gone->gpus.size(), 1u);
  EXPECT_EQ(gone->gpus[0].index, 1u);
  EXPECT_TRUE(gone->has(core::Anomaly::NoSuchProcess));
  EXPECT_FALSE(gone->has(core::Anomaly::Leaked));
  const auto* keeper = row_of(s, worker);
  ASSERT_NE(keeper, nullptr);
  EXPECT_TRUE(keeper->has(core::Anomaly::InheritedHolder));
  EXPECT_EQ(keeper->keeps, std::vector<pid_t>{trainer});
  EXPECT_TRUE(keeper->gpus.empty());
  const core::Ghost* ghost = s.ghost(trainer);
  ASSERT_NE(ghost, nullptr);
  EXPECT_EQ(ghost->gpus, std::vector<unsigned>{1});
  EXPECT_EQ(ghost->keepers, std::vector<pid_t>{worker});
  EXPECT_TRUE(ghost->exact);
  std::vector<pid_t> rows;
  for (const auto& r : s.rows) rows.push_back(r.pid);
  std::vector<pid_t> want{nvidia_job, trainer, worker};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(rows, want);

  // Memory splits per GPU: NVIDIA's is attributed, Acme's is ghost memory kept alive.
  EXPECT_EQ(s.memory_summary(nvidia).attributed_bytes, 4 * kGiB);
  EXPECT_EQ(s.memory_summary(nvidia).ghost_bytes, 0u);
  EXPECT_EQ(s.memory_summary(acme).ghost_bytes, 2 * kGiB);
  EXPECT_EQ(s.memory_summary(acme).leaked_bytes, 0u);
  EXPECT_EQ(s.memory_summary(acme).ghost_keepers, 1u);

  // Doctor: the ghost on GPU 1, kept by the worker, with the command that frees it.
  doctor::DoctorInput in{s, s, {}, std::nullopt, reap::is_protected_process};
  auto findings = doctor::diagnose(in);
  auto ghost_finding = std::find_if(findings.begin(), findings.end(), [&](const auto& f) {
    return f.code == doctor::FindingCode::NoSuchProcess && f.gpus == std::vector<unsigned>{1};
  });
  ASSERT_NE(ghost_finding, findings.end());
  EXPECT_NE(std::find(ghost_finding->pids.begin(), ghost_finding->pids.end(), worker),
            ghost_finding->pids.end());
  EXPECT_EQ(ghost_finding->remedy.at(0).command, "gpureap kill " + std::to_string(trainer));
  for (const auto& f : findings)
    EXPECT_EQ(std::find(f.pids.begin(), f.pids.end(), nvidia_job), f.pids.end())
        << doctor::to_string(f.code) << " names the healthy NVIDIA job";

  // Metrics: one identity series per GPU with its vendor, ghost bytes on GPU 1 alone.
  auto text = exporter::render(exporter::build_metrics({s, findings, {}, false}));
  EXPECT_NE(text.find("gpureap_backend_up{backend=\"acme\",vendor=\"acme\"} 1"), std::string::npos)
      << text;
  EXPECT_NE(text.find("gpureap_gpu_info{gpu=\"1\",uuid=\"\",pci_bus_id=\"0000:c1:00.0\","
                      "vendor=\"acme\",name=\"Acme A1\",driver_version=\"1.2.3\","
                      "backend=\"acme\",key=\"acme:pci:0000:c1:00.0\"} 1"),
            std::string::npos)
      << text;
  EXPECT_NE(
      text.find("gpureap_gpu_memory_ghost_bytes{gpu=\"1\",uuid=\"\",pci_bus_id=\"0000:c1:00.0\","
                "vendor=\"acme\"} 2147483648"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("gpureap_gpu_memory_ghost_bytes{gpu=\"0\",uuid=\"GPU-0000\","
                      "pci_bus_id=\"00000000:17:00.0\",vendor=\"nvidia\"} 0"),
            std::string::npos)
      << text;

  // JSON: every backend, each GPU's key and vendor; v1's "backend" is the first one.
  auto json = output::snapshot_to_json(s);
  EXPECT_EQ(json["backend"]["name"], "nvml");
  ASSERT_EQ(json["backends"].size(), 4u);
  EXPECT_EQ(json["backends"][1]["error_code"], "no-device");
  EXPECT_EQ(json["backends"][3]["vendor"], "acme");
  EXPECT_EQ(json["gpus"][1]["key"], "acme:pci:0000:c1:00.0");
  EXPECT_EQ(json["gpus"][1]["device_numbers"][0], "226:128");
}

// Acting on the Acme GPU reaches its ghost's keeper alone, acting on the NVIDIA GPU the NVIDIA
// job alone: the whole plans, so who is left alone is asserted too.
TEST_F(SecondVendor, KillPlansReachOnlyTheGpuTheyName) {
  const pid_t nvidia_job = spawn_holding(dev_ + "/nvidia0");
  auto [trainer, worker] = gone_trainer_with_worker();
  write_scenario(one_nvidia_job(nvidia_job));
  auto s = collect_with_acme({{trainer, 2 * kGiB}});

  reap::Caller caller{getpid(), getpgrp(), {getppid(), 1}, getuid(), geteuid()};
  auto plan = [&](const reap::Request& r) {
    auto p = reap::make_plan(s, r, caller, [](const core::HostProcess&) {
      return std::optional<core::ProcessDetails>();
    });
    EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().text());
    return p.ok() ? *p : reap::Plan{};
  };
  auto signalled = [](const reap::Plan& p) {
    std::vector<pid_t> out;
    for (const auto& t : p.targets) {
      EXPECT_EQ(t.action, reap::Action::Signal) << t.pid;
      out.push_back(t.pid);
    }
    return out;
  };
  auto gone = [](const reap::Plan& p) {
    std::vector<pid_t> out;
    for (const auto& g : p.gone) out.push_back(g.pid);
    return out;
  };

  auto acme = plan({.gpu = 1});
  EXPECT_EQ(signalled(acme), std::vector<pid_t>{worker});
  EXPECT_EQ(gone(acme), std::vector<pid_t>{trainer});
  auto nvidia = plan({.gpu = 0});
  EXPECT_EQ(signalled(nvidia), std::vector<pid_t>{nvidia_job});
  EXPECT_TRUE(gone(nvidia).empty());
  auto ghosts = plan({.ghosts = true});
  EXPECT_EQ(signalled(ghosts), std::vector<pid_t>{worker});
  EXPECT_EQ(gone(ghosts), std::vector<pid_t>{trainer});
}

// Acme's kernel log has error codes of its own (acme_kernel_log, in its folder): they reach
// doctor, `ps`'s note, the reset advice and /metrics in Acme's words, on the Acme GPU alone.
TEST_F(SecondVendor, ItsKernelLogErrorsReachDoctorAndMetricsInItsOwnWords) {
  const pid_t nvidia_job = spawn_holding(dev_ + "/nvidia0");
  write_scenario(one_nvidia_job(nvidia_job));
  auto s = collect_with_acme({});
  const std::string kmsg = dir_ + "/kmsg";
  std::ofstream(kmsg)
      << "6,1,1000,-;Linux version 6.1.0\n"
         "4,2,2000000,-;acme 0000:c1:00.0: AERR 23: ring 2 timed out\n"
         // A process writing to /dev/kmsg gets LOG_USER (facility 1): not the driver.
         "12,3,2500000,-;acme 0000:c1:00.0: AERR 51: forged\n"
         "2,4,3000000,-;acme 0000:c1:00.0: AERR 51: board lost\n";
  const long long boot = std::chrono::duration_cast<std::chrono::seconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count() -
                         3600;
  kernel::KernelLogFollower follower(kmsg, backend::kernel_log_parsers(registry));
  auto events = follower.poll(boot, s.drivers.gpus);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].gpu, 1u);  // the Acme GPU, by its PCI address
  EXPECT_EQ(events[0].code_text(), "AERR 23");
  EXPECT_EQ(events[1].code_text(), "AERR 51");
  EXPECT_TRUE(events[1].needs_reboot);

  // Doctor: one finding on GPU 1 in Acme's words, with its catalogue's cause and remedy.
  doctor::DoctorInput in{s, s, {}, std::nullopt, reap::is_protected_process};
  in.kernel = &follower.log();
  in.backends = &registry;
  auto findings = doctor::diagnose(in);
  std::vector<const doctor::Finding*> kernel;
  for (const auto& f : findings)
    if (f.code == doctor::FindingCode::GpuKernelError) kernel.push_back(&f);
  ASSERT_EQ(kernel.size(), 1u);
  const auto& f = *kernel[0];
  EXPECT_EQ(f.gpus, std::vector<unsigned>{1});
  EXPECT_EQ(f.severity, doctor::Severity::Critical);
  EXPECT_EQ(f.summary, "GPU 1: 2 AERR errors in the kernel log (AERR 23, 51)");
  EXPECT_EQ(f.explanation,
            "AERR 23, ring timeout: a shader ran past the ring's watchdog. AERR 51, board lost: "
            "the board stopped answering on the bus.");
  ASSERT_GE(f.remedy.size(), 3u);
  EXPECT_EQ(f.remedy[0].line(), "acme-smi --reset-ring   # AERR 23");
  EXPECT_EQ(f.remedy[1].line(), "reboot   # AERR 51");
  EXPECT_EQ(f.remedy.back().command, "journalctl -k | grep acme");
  for (const auto& other : findings)
    EXPECT_EQ(std::find(other.pids.begin(), other.pids.end(), nvidia_job), other.pids.end())
        << doctor::to_string(other.code) << " names the healthy NVIDIA job";

  // `ps`'s note and the reset advice: the board is lost until a reboot; GPU 0 is not.
  EXPECT_EQ(output::kernel_note(follower.log()),
            "note: GPU 1 had AERR 51 (board lost) since boot; `gpureap doctor` explains");
  EXPECT_EQ(doctor::reset_command(s, 1, &follower.log(), &registry),
            "reboot   # AERR 51 since boot (board lost): a GPU reset cannot recover it");
  EXPECT_EQ(doctor::reset_command(s, 0, &follower.log(), &registry), "gpureap reset --gpu 0");

  // /metrics: the generic series, by Acme's kind and codes; NVIDIA's old names have none.
  auto counts = follower.counts();
  auto text = exporter::render(exporter::build_metrics({s, findings, {}, false, &counts, true}));
  for (const char* code : {"23", "51"})
    EXPECT_NE(text.find(std::string("gpureap_gpu_kernel_events_total{gpu=\"1\",uuid=\"\","
                                    "pci_bus_id=\"0000:c1:00\",vendor=\"acme\",kind=\"aerr\","
                                    "code=\"") +
                        code + "\"} 1"),
              std::string::npos)
        << text;
  EXPECT_EQ(text.find("gpureap_gpu_kernel_events_total{gpu=\"0\""), std::string::npos) << text;
  EXPECT_EQ(text.find("gpureap_xid_"), std::string::npos) << text;
  EXPECT_NE(text.find("gpureap_findings{code=\"gpu-xid\",severity=\"critical\"} 1"),
            std::string::npos)
      << text;
}

TEST_F(SecondVendor, ADownDriverDoesNotHideTheOtherVendorsGpus) {
  auto [trainer, worker] = gone_trainer_with_worker();
  write_scenario({{"init_error", "driver_not_loaded"}});

  auto s = collect_with_acme({{trainer, kGiB}});

  ASSERT_EQ(s.drivers.backends.size(), 4u);
  EXPECT_FALSE(s.drivers.backends[0].available);
  EXPECT_EQ(s.drivers.backends[0].error_code, core::BackendErrorCode::DriverNotLoaded);
  EXPECT_TRUE(s.drivers.backends[3].available);
  ASSERT_EQ(s.drivers.gpus.size(), 1u);
  EXPECT_EQ(s.drivers.gpus[0].vendor, "acme");
  EXPECT_EQ(s.drivers.gpus[0].index, 0u);  // no NVIDIA GPU: the numbering starts at Acme's
  const core::Ghost* ghost = s.ghost(trainer);
  ASSERT_NE(ghost, nullptr);
  EXPECT_EQ(ghost->keepers, std::vector<pid_t>{worker});

  doctor::DoctorInput in{s, s, {}, std::nullopt, reap::is_protected_process};
  auto findings = doctor::diagnose(in);
  auto has = [&](doctor::FindingCode code) {
    return std::any_of(findings.begin(), findings.end(),
                       [&](const auto& f) { return f.code == code; });
  };
  EXPECT_TRUE(has(doctor::FindingCode::DriverMissing));
  EXPECT_TRUE(has(doctor::FindingCode::NoSuchProcess));
}

}  // namespace
}  // namespace gpureap::testing

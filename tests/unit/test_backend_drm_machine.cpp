// A machine with AMD and Intel GPUs, as the kernel shows it (sysfs, fd links, fdinfo, KFD):
// through the real holder scan, the DRM backends and the join, every figure exactly. A DRM
// client shared by several fds or processes is counted once, nothing is dropped for its unit,
// and KFD's list gives AMD the same ghost story as NVML's.
#include <gtest/gtest.h>
#include <sys/sysmacros.h>

#include <algorithm>

#include "backend/backend_set.h"
#include "backend/drm/drm_backend.h"
#include "byte_units.h"
#include "collect/collector.h"
#include "doctor/diagnose.h"
#include "drm_machine.h"
#include "export/metrics.h"
#include "export/prometheus_text.h"
#include "reap/planner.h"
#include "reap/safety.h"

namespace gpureap::testing {
namespace {

const std::string kAmdA = "0000:03:00.0", kAmdB = "0000:43:00.0", kIntelIgpu = "0000:00:02.0";
constexpr unsigned kGpuIdA = 1234, kGpuIdB = 5678;

class DrmMachineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_.amd_gpu(0, 128, kAmdA, 16 * kGiB, 6 * kGiB + 512 * kMiB, "AMD Radeon PRO W6800");
    m_.amd_gpu(1, 129, kAmdB, 16 * kGiB, 1 * kGiB);
    m_.gpu("i915", 0x8086, 0x4680, 2, 130, kIntelIgpu);
    m_.kfd_node(1, kGpuIdA, 0, 0x03);
    m_.kfd_node(2, kGpuIdB, 0, 0x43);
    m_.write("sys/class/kfd/kfd/topology/nodes/0/gpu_id", "0\n");  // the CPU node

    // A trainer (100) with one client on GPU A held through two fds, inherited by its two
    // workers, and a client of its own on GPU B with the same id (ids are per device).
    m_.process(100, "trainer", 1, 100, 100);
    std::string client42 = DrmMachine::amdgpu_fdinfo(kAmdA, 42, 1024 * 1024, 2048);
    m_.open_fd(100, 5, "dri/renderD128", client42);
    m_.open_fd(100, 6, "dri/renderD128", client42);  // dup'd
    m_.open_fd(100, 7, "dri/renderD129",
               "drm-driver:\tamdgpu\ndrm-client-id:\t42\ndrm-pdev:\t" + kAmdB +
                   "\ndrm-total-vram:\t536870912\ndrm-resident-vram:\t536870912\n");
    m_.open_fd(100, 8, "kfd", "");
    for (pid_t w : {101, 102}) {
      m_.process(w, "pt_data_worker", 100, 100, 100);
      m_.open_fd(w, 5, "dri/renderD128", client42);
    }
    m_.kfd_process(100, kGpuIdA, 1 * kGiB + 4096);

    // Another user's job (200) on GPU A, in the newer keys with MiB.
    m_.process(200, "render", 1, 200, 200);
    m_.open_fd(200, 3, "dri/renderD128",
               "drm-driver:\tamdgpu\ndrm-client-id:\t43\ndrm-pdev:\t" + kAmdA +
                   "\ndrm-total-vram:\t3072 MiB\ndrm-resident-vram:\t3072 MiB\n"
                   "drm-total-gtt:\t4 MiB\ndrm-resident-gtt:\t4 MiB\n");

    // A ROCm job whose leader (777) is gone: KFD still lists it with 2 GiB, and its orphaned
    // worker (778) keeps /dev/kfd open.
    m_.kfd_process(777, kGpuIdA, 2 * kGiB);
    m_.process(778, "rocm_worker", 1, 777, 777);
    m_.open_fd(778, 4, "kfd", "");

    // A desktop client on the Intel iGPU: system memory only, in MiB and unit-less bytes.
    m_.process(300, "firefox", 1, 300, 300);
    m_.open_fd(300, 9, "dri/renderD130",
               "drm-driver:\ti915\ndrm-client-id:\t7\ndrm-pdev:\t" + kIntelIgpu +
                   "\ndrm-total-system0:\t3 MiB\ndrm-resident-system0:\t2097152\n"
                   "drm-engine-render:\t25662044495 ns\ndrm-engine-capacity-video:\t2\n");
  }

  std::shared_ptr<backend::BackendSet> backends() {
    backend::BackendSettings settings;
    settings.proc_root = m_.proc_root();
    settings.dev_root = m_.dev_root();
    settings.sys_root = m_.sys_root();
    backend::Registry registry{backend::drm::amd_entry(), backend::drm::intel_entry()};
    return backend::BackendSet::make(registry, settings, {});
  }

  collect::Collector collector() {
    auto c = collect::Collector::open({m_.proc_root(), m_.dev_root(), m_.sys_root()}, backends());
    EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.error().text());
    return std::move(*c);
  }

  static const core::DriverProcess* listed(const core::Gpu& g, pid_t pid) {
    auto it = std::find_if(g.processes.begin(), g.processes.end(),
                           [&](const core::DriverProcess& p) { return p.pid == pid; });
    return it == g.processes.end() ? nullptr : &*it;
  }

  static std::vector<pid_t> listed_pids(const core::Gpu& g) {
    std::vector<pid_t> out;
    for (const auto& p : g.processes) out.push_back(p.pid);
    return out;
  }

  DrmMachine m_;
};

TEST_F(DrmMachineTest, GpusComeFromSysfsWithTheirNodesAndTotals) {
  auto s = collector().collect();
  ASSERT_EQ(s.drivers.backends.size(), 2u);
  EXPECT_EQ(s.drivers.backends[0].name, "amdgpu");
  EXPECT_TRUE(s.drivers.backends[0].available);
  EXPECT_EQ(s.drivers.backends[0].driver_version, "6.8.0-test");
  EXPECT_EQ(s.drivers.backends[1].name, "intel");
  EXPECT_TRUE(s.drivers.backends[1].available);
  ASSERT_EQ(s.drivers.gpus.size(), 3u);

  const auto& a = s.drivers.gpus[0];
  EXPECT_EQ(a.index, 0u);
  EXPECT_EQ(a.vendor, "amd");
  EXPECT_EQ(a.key, "amd:pci:" + kAmdA);
  EXPECT_EQ(a.name, "AMD Radeon PRO W6800");
  EXPECT_EQ(a.pci_bus_id, kAmdA);
  EXPECT_EQ(a.memory.total_bytes, 16 * kGiB);
  EXPECT_EQ(a.memory.used_bytes, 6 * kGiB + 512 * kMiB);
  EXPECT_EQ(a.memory.free_bytes, 9 * kGiB + 512 * kMiB);
  EXPECT_EQ(a.utilization_percent, 37u);
  // card0, renderD128 and /dev/kfd (shared by every AMD GPU KFD runs) reach it.
  std::vector<dev_t> a_nodes{::makedev(226, 0), ::makedev(226, 128), ::makedev(510, 0)};
  EXPECT_EQ(a.device_numbers, a_nodes);

  const auto& b = s.drivers.gpus[1];
  EXPECT_EQ(b.index, 1u);
  EXPECT_EQ(b.name, "AMD 0x73bf");  // no product name: the PCI device id
  std::vector<dev_t> b_nodes{::makedev(226, 1), ::makedev(226, 129), ::makedev(510, 0)};
  EXPECT_EQ(b.device_numbers, b_nodes);

  // Intel: ids and nodes only; every figure sysfs does not give stays unknown, never 0.
  const auto& i = s.drivers.gpus[2];
  EXPECT_EQ(i.index, 2u);
  EXPECT_EQ(i.vendor, "intel");
  EXPECT_EQ(i.backend, "intel");
  EXPECT_FALSE(i.memory.total_bytes.has_value());
  EXPECT_FALSE(i.memory.used_bytes.has_value());
  EXPECT_FALSE(i.utilization_percent.has_value());
  EXPECT_FALSE(i.temperature_celsius.has_value());
}

TEST_F(DrmMachineTest, EachClientIsCountedOnceOnTheLowestPidThatHoldsIt) {
  auto s = collector().collect();
  const auto& a = s.drivers.gpus[0];
  // Listed on A: the trainer, the other job and the gone ROCm leader. The workers are not
  // listed: they share the trainer's client, which is counted once.
  EXPECT_EQ(listed_pids(a), (std::vector<pid_t>{100, 200, 777}));
  const auto* trainer = listed(a, 100);
  ASSERT_NE(trainer, nullptr);
  // DRM says 1 GiB (fds 5 and 6 and both workers: one client); KFD says 1 GiB + 4 KiB for
  // the same VRAM: the larger, never the sum.
  EXPECT_EQ(trainer->used_bytes, 1 * kGiB + 4096);
  EXPECT_EQ(trainer->kind, core::GpuProcessKind::Compute);
  EXPECT_EQ(trainer->sharers, (std::vector<pid_t>{101, 102}));
  ASSERT_EQ(trainer->regions.size(), 3u);
  EXPECT_EQ(trainer->regions[0].name, "vram");
  EXPECT_TRUE(trainer->regions[0].device_local);
  EXPECT_EQ(trainer->regions[0].resident_bytes, 1 * kGiB);  // drm-memory-vram, KiB
  EXPECT_EQ(trainer->regions[1].name, "gtt");
  EXPECT_FALSE(trainer->regions[1].device_local);
  EXPECT_EQ(trainer->regions[1].resident_bytes, 2 * kMiB);

  const auto* other = listed(a, 200);
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->used_bytes, 3 * kGiB);  // MiB; the 4 MiB of GTT is system memory
  EXPECT_EQ(other->kind, core::GpuProcessKind::Graphics);
  EXPECT_TRUE(other->sharers.empty());

  // GPU B: the trainer's client with the same id 42 is another client (another device), in
  // unit-less bytes.
  const auto& b = s.drivers.gpus[1];
  EXPECT_EQ(listed_pids(b), (std::vector<pid_t>{100}));
  EXPECT_EQ(listed(b, 100)->used_bytes, 512 * kMiB);

  // Intel iGPU: no memory of its own, so its system memory is what it uses.
  const auto& i = s.drivers.gpus[2];
  EXPECT_EQ(listed_pids(i), (std::vector<pid_t>{300}));
  EXPECT_EQ(listed(i, 300)->used_bytes, 2 * kMiB);

  EXPECT_EQ(*s.drivers.backends[0].detail("drm_clients"), "3");
  EXPECT_EQ(*s.drivers.backends[1].detail("drm_clients"), "1");
}

TEST_F(DrmMachineTest, TheJoinSplitsMemoryAndFindsTheKfdGhostAndItsKeeper) {
  auto s = collector().collect();
  const auto& a = s.drivers.gpus[0];
  auto m = s.memory_summary(a);
  EXPECT_EQ(m.attributed_bytes, 4 * kGiB + 4096);
  EXPECT_EQ(m.ghost_bytes, 2 * kGiB);
  EXPECT_EQ(m.leaked_bytes, 0u);
  EXPECT_EQ(m.unattributed_bytes, 512 * kMiB - 4096);

  // The gone leader is a ghost kept by its orphaned worker's /dev/kfd.
  const auto* ghost = s.ghost(777);
  ASSERT_NE(ghost, nullptr);
  EXPECT_EQ(ghost->gpus, std::vector<unsigned>{0});
  EXPECT_EQ(ghost->bytes, 2 * kGiB);
  EXPECT_EQ(ghost->keepers, std::vector<pid_t>{778});
  EXPECT_FALSE(ghost->leaked);
  const auto* gone = s.row(777);
  ASSERT_NE(gone, nullptr);
  EXPECT_TRUE(gone->has(core::Anomaly::NoSuchProcess));
  const auto* keeper = s.row(778);
  ASSERT_NE(keeper, nullptr);
  EXPECT_TRUE(keeper->has(core::Anomaly::InheritedHolder));
  EXPECT_TRUE(keeper->has(core::Anomaly::Orphan));

  // The trainer's workers are its own job: no anomaly, no ghost, named as sharing its context.
  for (pid_t w : {101, 102}) {
    const auto* r = s.row(w);
    ASSERT_NE(r, nullptr) << w;
    EXPECT_TRUE(r->anomalies.empty()) << w;
    EXPECT_EQ(r->shares_context_of, std::vector<pid_t>{100}) << w;
    EXPECT_FALSE(r->listed_by_driver) << w;
  }
  const auto* trainer = s.row(100);
  ASSERT_NE(trainer, nullptr);
  ASSERT_EQ(trainer->gpus.size(), 2u);
  EXPECT_EQ(trainer->gpus[0].shared_with, (std::vector<pid_t>{101, 102}));
  EXPECT_TRUE(trainer->anomalies.empty());
  EXPECT_EQ(s.ghosts.size(), 1u);
}

TEST_F(DrmMachineTest, DoctorAndMetricsReadTheSameVerdict) {
  auto s = collector().collect();
  doctor::DoctorInput in{s, s, {}, std::nullopt, reap::is_protected_process};
  auto findings = doctor::diagnose(in);
  auto ghost = std::find_if(findings.begin(), findings.end(), [](const doctor::Finding& f) {
    return f.code == doctor::FindingCode::NoSuchProcess;
  });
  ASSERT_NE(ghost, findings.end());
  EXPECT_EQ(ghost->gpus, std::vector<unsigned>{0});
  EXPECT_EQ(ghost->remedy.at(0).command, "gpureap kill 777") << ghost->remedy.at(0).line();
  // No finding names the trainer or its workers above info: they are one healthy job.
  for (const auto& f : findings)
    for (pid_t healthy : {100, 101, 102, 200, 300})
      EXPECT_FALSE(std::count(f.pids.begin(), f.pids.end(), healthy) &&
                   f.severity != doctor::Severity::Info)
          << doctor::to_string(f.code) << " names " << healthy;

  auto text = exporter::render(exporter::build_metrics({s, findings, {}, false}));
  const std::string a = "{gpu=\"0\",uuid=\"\",pci_bus_id=\"" + kAmdA + "\",vendor=\"amd\"}";
  EXPECT_NE(text.find("gpureap_gpu_memory_used_bytes" + a + " 6979321856\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("gpureap_gpu_memory_ghost_bytes" + a + " 2147483648\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("gpureap_backend_up{backend=\"amdgpu\",vendor=\"amd\"} 1"), std::string::npos)
      << text;
  // Intel publishes no used memory: the series is absent, never 0.
  EXPECT_EQ(text.find("gpureap_gpu_memory_used_bytes{gpu=\"2\""), std::string::npos) << text;
}

// The whole plans: --ghosts reaches the gone ROCm leader's orphaned keeper alone (never the
// trainer's workers, which share a live job's client), and --gpu on the Intel GPU its one client.
TEST_F(DrmMachineTest, KillPlansReachTheGhostsKeeperAloneAndLeaveTheHealthyJobs) {
  auto s = collector().collect();
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
    for (const auto& t : p.targets) out.push_back(t.pid);
    return out;
  };
  auto ghosts = plan({.ghosts = true});
  EXPECT_EQ(signalled(ghosts), std::vector<pid_t>{778});
  ASSERT_EQ(ghosts.gone.size(), 1u);
  EXPECT_EQ(ghosts.gone[0].pid, 777);
  auto intel = plan({.gpu = 2});
  EXPECT_EQ(signalled(intel), std::vector<pid_t>{300});
  EXPECT_TRUE(intel.gone.empty());
}

TEST_F(DrmMachineTest, BetweenScansAClosedClientLeavesTheListAndAReusedFdIsNotItsClient) {
  auto c = collector();
  auto s = c.collect();
  ASSERT_NE(listed(s.drivers.gpus[0], 200), nullptr);

  // The job closes its render node; the trainer's fd 6 now is another client (43 → 99).
  m_.close_fd(200, 3);
  m_.close_fd(100, 6);
  m_.open_fd(100, 6, "dri/renderD128", DrmMachine::amdgpu_fdinfo(kAmdA, 99, 8, 0));
  m_.set_vram_used(kAmdA, 3 * kGiB + 512 * kMiB);
  auto drivers = c.read_drivers();  // no scan: what the kill's release check polls
  const auto& a = drivers.gpus[0];
  EXPECT_EQ(listed_pids(a), (std::vector<pid_t>{100, 777}));
  EXPECT_EQ(listed(a, 100)->used_bytes, 1 * kGiB + 4096);  // client 42 still held by fd 5
  EXPECT_EQ(a.memory.used_bytes, 3 * kGiB + 512 * kMiB);
  // The new client 99 needs a scan to be seen; then it is the trainer's too.
  auto rescanned = c.collect();
  EXPECT_EQ(*rescanned.drivers.backends[0].detail("drm_clients"), "3");

  // Once every holder of client 42 has exited, it is gone.
  for (pid_t p : {100, 101, 102}) m_.exit_process(p);
  m_.remove("sys/class/kfd/kfd/proc/100");
  auto after = c.read_drivers();
  EXPECT_EQ(listed_pids(after.gpus[0]), (std::vector<pid_t>{777}));
  EXPECT_TRUE(listed_pids(after.gpus[1]).empty());
}

TEST_F(DrmMachineTest, HostileFdinfoIsAWarningForThatFdAndChangesNoFigure) {
  m_.process(400, "hostile", 1, 400, 400);
  m_.open_fd(400, 3, "dri/renderD128",
             "drm-driver:\tamdgpu\ndrm-client-id:\t50\ndrm-pdev:\t" + kAmdA +
                 "\ndrm-memory-vram:\t99999999999999999999999 KiB\n");
  m_.process(401, "junk", 1, 401, 401);
  m_.open_fd(401, 3, "dri/renderD128",
             "drm-driver:\tamdgpu\n" + std::string(100000, 'x') + "\n\x01\x02garbage\n" +
                 "drm-client-id:\tnot-a-number\n");
  // A DRM file with no usage stats (a kernel before 5.14): a holder, and no warning.
  m_.process(402, "old_kernel", 1, 402, 402);
  m_.open_fd(402, 3, "dri/renderD128", "");
  auto s = collector().collect();
  const auto& a = s.drivers.gpus[0];
  EXPECT_EQ(listed_pids(a), (std::vector<pid_t>{100, 200, 777}));
  const auto& warnings = s.drivers.backends[0].warnings;
  EXPECT_TRUE(std::any_of(warnings.begin(), warnings.end(), [](const std::string& w) {
    return w.find("PID 400 fd 3") != std::string::npos;
  })) << ::testing::PrintToString(warnings);
  EXPECT_TRUE(std::any_of(warnings.begin(), warnings.end(), [](const std::string& w) {
    return w.find("PID 401 fd 3") != std::string::npos;
  })) << ::testing::PrintToString(warnings);
  EXPECT_FALSE(std::any_of(warnings.begin(), warnings.end(), [](const std::string& w) {
    return w.find("PID 402") != std::string::npos;
  })) << ::testing::PrintToString(warnings);
  // They still hold the GPU's node: holders, not listed.
  for (pid_t p : {400, 401, 402}) {
    ASSERT_NE(s.row(p), nullptr) << p;
    EXPECT_FALSE(s.row(p)->listed_by_driver) << p;
  }
}

TEST(DrmMachineAbsent, NoGpuOfItsKindIsNotADownBackend) {
  DrmMachine m;  // no GPU in sysfs at all
  backend::BackendSettings settings;
  settings.proc_root = m.proc_root();
  settings.sys_root = m.sys_root();
  backend::BackendSet set(
      {backend::drm::amd_entry().make(settings), backend::drm::intel_entry().make(settings)});
  auto reading = set.read();
  ASSERT_EQ(reading.backends.size(), 2u);
  for (const auto& b : reading.backends) {
    EXPECT_FALSE(b.available);
    EXPECT_EQ(b.error_code, core::BackendErrorCode::NoDevice);
  }
  EXPECT_FALSE(reading.any_available());
  EXPECT_EQ(reading.first_down(), nullptr);
  EXPECT_TRUE(reading.gpus.empty());

  settings.sys_root = m.path("no-such-sys");
  auto missing = backend::drm::amd_entry().make(settings)->collect();
  EXPECT_EQ(missing.error_code, core::BackendErrorCode::NoDevice);
  ASSERT_TRUE(missing.error.has_value());
  EXPECT_NE(missing.error->find("is missing"), std::string::npos) << *missing.error;
}

}  // namespace
}  // namespace gpureap::testing

namespace gpureap::testing {
namespace {

// An Intel xe dGPU: VRAM from its tile, a client in xe's own keys (vram0 in KiB, gtt, cycles).
TEST(DrmMachineXe, AnXeClientsVramIsItsDeviceLocalResidentMemory) {
  DrmMachine m;
  const std::string pci = "0000:03:00.0";
  m.gpu("xe", 0x8086, 0x56a0, 0, 128, pci);
  m.write("sys/devices/pci0000:00/" + pci + "/tile0/physical_vram_size_bytes",
          std::to_string(16ull << 30) + "\n");
  m.process(500, "blender", 1, 500, 500);
  m.open_fd(500, 7, "dri/renderD128",
            "drm-driver:\txe\ndrm-client-id:\t3\ndrm-pdev:\t" + pci +
                "\ndrm-total-vram0:\t262144 KiB\ndrm-resident-vram0:\t131072 KiB\n"
                "drm-total-gtt:\t4096 KiB\ndrm-resident-gtt:\t4096 KiB\n"
                "drm-cycles-rcs:\t28257900\ndrm-total-cycles-rcs:\t7655183225\n");
  backend::BackendSettings settings;
  settings.proc_root = m.proc_root();
  settings.dev_root = m.dev_root();
  settings.sys_root = m.sys_root();
  auto c = collect::Collector::open(
      {m.proc_root(), m.dev_root(), m.sys_root()},
      backend::BackendSet::make({backend::drm::intel_entry()}, settings, {}));
  ASSERT_TRUE(c.ok()) << c.error().text();
  auto s = c->collect();
  ASSERT_EQ(s.drivers.gpus.size(), 1u);
  const auto& g = s.drivers.gpus[0];
  EXPECT_EQ(g.vendor, "intel");
  EXPECT_EQ(g.memory.total_bytes, 16ull << 30);
  EXPECT_FALSE(g.memory.used_bytes.has_value());  // xe publishes no used figure: unknown
  ASSERT_EQ(g.processes.size(), 1u);
  EXPECT_EQ(g.processes[0].pid, 500);
  EXPECT_EQ(g.processes[0].used_bytes, 128ull << 20);  // resident vram0, not gtt
  ASSERT_EQ(g.processes[0].regions.size(), 2u);
  EXPECT_EQ(g.processes[0].regions[0].name, "vram0");
  EXPECT_EQ(g.processes[0].regions[0].total_bytes, 256ull << 20);
  EXPECT_EQ(g.processes[0].regions[1].name, "gtt");
  EXPECT_FALSE(g.processes[0].regions[1].device_local);
  // Nothing is attributed beyond what is known: no used figure, no unattributed one.
  EXPECT_FALSE(s.memory_summary(g).unattributed_bytes.has_value());
}

}  // namespace
}  // namespace gpureap::testing

namespace gpureap::testing {
namespace {

// Names from the PCI ID database, and the driver's version from the kernel.
class DrmNames : public ::testing::Test {
 protected:
  void SetUp() override {
    m_.amd_gpu(0, 128, kAmdA, 16 * kGiB, 1 * kGiB);      // Navi 21 on the RX 6900 XT board
    m_.gpu("i915", 0x8086, 0x4680, 1, 129, kIntelIgpu);  // no subsystem the database knows
  }
  core::Snapshot collect() {
    backend::BackendSettings settings;
    settings.proc_root = m_.proc_root();
    settings.dev_root = m_.dev_root();
    settings.sys_root = m_.sys_root();
    backend::Registry registry{backend::drm::amd_entry(), backend::drm::intel_entry()};
    auto c = collect::Collector::open({m_.proc_root(), m_.dev_root(), m_.sys_root()},
                                      backend::BackendSet::make(registry, settings, {}));
    EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.error().text());
    return c->collect();
  }
  DrmMachine m_;
};

TEST_F(DrmNames, TheDatabaseNamesTheBoardElseTheChip) {
  m_.pci_ids_fixture(GPUREAP_FIXTURES);
  auto s = collect();
  ASSERT_EQ(s.drivers.gpus.size(), 2u);
  EXPECT_EQ(s.drivers.gpus[0].name, "AMD Radeon RX 6900 XT");
  EXPECT_EQ(s.drivers.gpus[1].name, "Intel AlderLake-S GT1");
  const auto* path = s.drivers.backends[0].detail("pci_ids");
  ASSERT_TRUE(path);
  EXPECT_EQ(*path, m_.path("usr/share/misc/pci.ids"));
}

TEST_F(DrmNames, ABoardTheDatabaseDoesNotKnowIsNamedByItsChip) {
  m_.pci_ids(
      "1002  Advanced Micro Devices, Inc. [AMD/ATI]\n"
      "\t73bf  Navi 21 [Radeon RX 6800/6800 XT / 6900 XT]\n"
      "\t\t1da2 e437  Pulse Radeon RX 6800\n");
  auto s = collect();
  ASSERT_FALSE(s.drivers.gpus.empty());
  EXPECT_EQ(s.drivers.gpus[0].name, "AMD Navi 21 [Radeon RX 6800/6800 XT / 6900 XT]");
  // Intel's vendor is not in this file: the ids.
  EXPECT_EQ(s.drivers.gpus[1].name, "Intel 0x4680");
}

TEST_F(DrmNames, TheDriversOwnProductNameComesFirst) {
  m_.pci_ids_fixture(GPUREAP_FIXTURES);
  m_.write("sys/devices/pci0000:00/" + kAmdA + "/product_name", "AMD Radeon PRO W6800\n");
  EXPECT_EQ(collect().drivers.gpus[0].name, "AMD Radeon PRO W6800");
}

TEST_F(DrmNames, WithoutTheDatabaseTheIdsAndTheReportSaysSo) {
  auto s = collect();
  EXPECT_EQ(s.drivers.gpus[0].name, "AMD 0x73bf");
  const auto* path = s.drivers.backends[0].detail("pci_ids");
  ASSERT_TRUE(path);
  EXPECT_EQ(*path, "none");
}

TEST_F(DrmNames, TheDriverVersionIsTheModulesElseTheKernels) {
  m_.module_version("amdgpu", "6.2.4");  // AMD's DKMS driver
  auto s = collect();
  ASSERT_EQ(s.drivers.backends.size(), 2u);
  EXPECT_EQ(s.drivers.backends[0].driver_version, "6.2.4");
  ASSERT_TRUE(s.drivers.backends[0].detail("driver_version_of"));
  EXPECT_EQ(*s.drivers.backends[0].detail("driver_version_of"), "module amdgpu");
  // i915 in the kernel tree has no version of its own: the kernel's release.
  EXPECT_EQ(s.drivers.backends[1].driver_version, "6.8.0-test");
  EXPECT_EQ(*s.drivers.backends[1].detail("driver_version_of"), "kernel");
}

TEST_F(DrmNames, NeitherVersionIsUnknownNotInvented) {
  m_.remove("proc/sys/kernel/osrelease");
  m_.write("sys/module/amdgpu/version", "\n");  // empty: not a version
  auto s = collect();
  EXPECT_FALSE(s.drivers.backends[0].driver_version);
  EXPECT_FALSE(s.drivers.backends[0].detail("driver_version_of"));
}

}  // namespace
}  // namespace gpureap::testing

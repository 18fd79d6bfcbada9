#pragma once
// A snapshot with every field of every struct set somewhere, for the tests of what carries or
// shows a whole snapshot (the wire, the JSON document).
#include <sys/sysmacros.h>

#include <cmath>
#include <limits>
#include <string>

#include "snapshot_builders.h"

namespace gpureap::testing {

inline constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
inline const std::string kBadUtf8 =
    std::string("tr\xff\xfe") + "ain\x80" + "\xc0\xaf";  // not UTF-8

// Every optional of every struct set somewhere and left empty somewhere else; a ghost kept by
// orphaned workers, a leaked one, DRM regions and sharers, three backends with one down.
inline core::Snapshot rich_snapshot() {
  core::ProcView v;
  auto init = proc(1, 0, 1);
  init.details->container =
      core::ContainerInfo{"kubernetes", "0123abcd", "pod-uid-1", "train", "bert-0", "research\xff"};
  init.details->container->hierarchy = "name=systemd";
  init.details->container->cgroup = "/kubepods/pod-uid-1/0123abcd\xff";
  init.details->container->verified = true;
  init.details->container->verification = "containerd names it as the container's init";
  init.details->exe = core::ExecutableFile{"/sbin/init", true};
  init.details->euid = 0;
  init.stat.flags = 0x00400100;
  init.stat.num_threads = 1;
  init.stat.rss_pages = 2500;
  init.stat.cpu_ticks = 4321;  // CPU% and TIME in top from a daemon's snapshot
  auto listed_live = holder(100, 1, 100);
  listed_live.stat.comm = kBadUtf8;
  listed_live.details->cmdline = {"python", kBadUtf8, "", "--opt=\x01\x7f"};
  listed_live.details->wchan = "do_wait";
  listed_live.details->rank_labels = core::RankLabels{3, 1, 8, 4, "run\xff", 0, 3};
  listed_live.details->container = core::ContainerInfo{"docker", std::nullopt, std::nullopt};
  listed_live.details->container->verification = "cgroup /u lies in user@1000.service";
  listed_live.details->exe = core::ExecutableFile{"/usr/bin/python3\xff", false};
  listed_live.devices[0].open_file = "100:5";
  listed_live.stat.start_ticks = kMax;
  // 4242 died; its workers, reparented to init, keep GPU 0's file open.
  auto worker = holder(4250, 1, 4242, 0, 'T');
  worker.details->user.reset();
  worker.details->uid.reset();
  worker.details->ns_pids = {4250, 7, 1};
  worker.devices[0].open_file = "4250:5";
  auto hidden = proc(5000, 1, 5000, 'D');
  hidden.details.reset();
  hidden.fds_readable = false;
  hidden.stat.pid = 5000;
  auto drm_holder = proc(6000, 1, 6000, 'S');
  drm_holder.devices.push_back(
      {"/dev/dri/renderD128", "drm-render", ::makedev(226, 128), true, {3, 7}, std::nullopt});
  drm_holder.devices.push_back({"/dev/kfd", "kfd", std::nullopt, false, {}, std::nullopt, 6002});
  drm_holder.stat.leader_exited = true;  // its main thread has exited, another runs on
  auto sharer = proc(6001, 6000, 6000, 'Z');
  sharer.stat.ppid = -1;        // signed fields keep their sign
  sharer.stat.wait_status = 9;  // killed by SIGKILL
  v.processes = {init, listed_live, worker, hidden, drm_holder, sharer};
  v.uninspectable = 0;
  v.details_complete = true;
  v.warnings = {"some warning", kBadUtf8};
  v.boot_time = -12;
  v.ticks_per_second = 250;
  v.in_child_pid_namespace = false;
  v.pid_namespace = kMax;
  v.driver_device_files = {"nvml"};
  v.open_files_unknown = std::nullopt;
  v.exited_parents = {{4250, 4242}};
  v.listed_since = {{4242, kMax}};
  v.listed_first_process = {{4242, 5000}};  // before its worker 4250 started
  v.ends = {
      {7777, {{10, 20, false}, {30, kMax, true, 9}}}};  // a holder that ended, not of the join
  // A rank killed by SIGKILL, and one whose status and label are unknown.
  v.rank_exits = {{4242, 5, 7778, 11, 3u, kMax, 9, true},
                  {4242, 5, 7779, 12, std::nullopt, 40, {}, false}};

  core::BackendReport nvml;
  nvml.name = "nvml";
  nvml.vendor = "nvidia";
  nvml.available = true;
  nvml.driver_version = "535.104.05";
  nvml.library = "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1";
  nvml.details = {{"nvml_version", "12.535.104"}, {"process_record_layout", "v3/24"}};
  nvml.warnings = {"a warning \xe2\x9a\xa0"};
  auto g0 =
      gpu(0, 0, 8 * GiB, {listed(100, 4 * GiB), listed(4242, 8 * GiB), listed(9999, 2 * GiB)});
  g0.uuid = "GPU-1234";
  g0.pci_bus_id = "00000000:17:00.0";
  g0.device_numbers.push_back(::makedev(226, 1));  // nvidia-drm's card1
  g0.display_device_numbers = {::makedev(226, 1)};
  g0.memory = {kMax, 12 * GiB, 88 * GiB, 0};
  g0.utilization_percent = 87;
  g0.memory_utilization_percent = 40;
  g0.temperature_celsius = 61;
  g0.power_watts = 512.125;
  g0.split_mode = false;
  g0.details = {{"k", "v"}, {"k", "again"}};
  g0.processes[0].kind = core::GpuProcessKind::Graphics;
  g0.processes[0].gpu_instance_id = 1;
  g0.processes[0].compute_instance_id = 0;
  g0.processes[0].sm_utilization_percent = 99;
  g0.processes[1].name = kBadUtf8;
  g0.processes[2].kind = core::GpuProcessKind::ServerClient;
  g0.processes[2].used_bytes.reset();
  g0.processes[1].serves_clients = "MPS server";
  g0.processes[2].server = g0.processes[1].pid;
  auto g1 = gpu(1, 1, 0, {});
  g1.name.reset();
  g1.minor.reset();
  g1.memory = {};
  g1.power_watts = std::nan("");
  g1.split_mode = true;
  g1.processes_error = "process records failed validation";
  g1.error = "fell off the bus";
  g1.known_from_kernel = "the kernel's PCI devices";
  g1.device_major = 195;
  core::GpuInstance mig;
  mig.gpu_instance_id = 3;
  mig.compute_instance_id = 0;
  mig.profile = "1g.18gb";
  mig.kind = "MIG";
  mig.uuid = "MIG-0c7ebb6a-\xff";
  mig.memory = {18 * GiB, 2 * GiB, 16 * GiB, 1};
  mig.device_numbers = {::makedev(511, 30), ::makedev(511, 31)};
  g1.instances = {mig, core::GpuInstance{5, std::nullopt, std::nullopt, std::nullopt, {}, {}}};
  nvml.gpus = {g0, g1};

  core::BackendReport amd;
  amd.name = "amdgpu";
  amd.vendor = "amd";
  amd.available = true;
  core::Gpu a0;
  a0.device_numbers = {::makedev(226, 128)};
  a0.power_watts = -std::numeric_limits<double>::infinity();
  core::DriverProcess drm = listed(6000, 3 * MiB);
  drm.regions = {{"vram", true, 4 * MiB, 3 * MiB, 0}, {"gtt", false, kMax, 1, std::nullopt}};
  drm.sharers = {6001};
  a0.processes = {drm};
  amd.gpus = {a0};

  core::BackendReport xe;
  xe.name = "xe";
  xe.vendor = "intel";
  xe.available = false;
  xe.error = "the xe driver did not answer within 2s: check dmesg";
  xe.error_code = core::BackendErrorCode::NotAnswering;
  xe.shortage = core::Shortage::SystemFiles;  // not what a hung driver says: every field is set

  std::vector<core::BackendReport> reports{nvml, amd, xe};
  auto reading = core::combine(std::move(reports));
  const auto at = std::chrono::system_clock::time_point(
      std::chrono::system_clock::duration(1'700'000'000'123'456'789LL));
  return core::join(std::move(v), std::move(reading), "node-\xff", at);
}

// The rich snapshot's inputs again, with the ProcView fields it leaves at their defaults set:
// between the two, every field of every struct the wire carries holds a value other than its
// default somewhere (EveryFieldOfEveryStructComesBackAsItWas checks that too).
inline core::Snapshot rich_snapshot_other_view() {
  const auto s = rich_snapshot();
  auto v = s.proc;
  v.uninspectable = 2;
  v.details_complete = false;
  v.in_child_pid_namespace = true;
  v.open_files_unknown = "kcmp(2) is refused here";
  v.scan_failures = {"2 processes could not be scanned (listing /proc/PID/fd: \xff)"};
  v.scan_shortages = {core::Shortage::OwnDescriptors, core::Shortage::Memory};
  return core::join(std::move(v), s.drivers, s.hostname, s.timestamp);
}

}  // namespace gpureap::testing

// The decoding half of the wire form (snapshot_wire.h): strict, every error naming the field's
// path (output/wire_shared.h).
#include <cmath>
#include <limits>
#include <set>
#include <type_traits>

#include "output/snapshot_wire.h"
#include "output/wire_shared.h"

namespace gpureap::output {
namespace {

using nlohmann::json;
using namespace wire;

std::pair<std::string, std::string> pair_of(const json& v, const std::string& path) {
  if (!v.is_array() || v.size() != 2) fail(path, "not a [key, value] pair");
  return {bytes(v[0], path + "[0]"), bytes(v[1], path + "[1]")};
}

core::GpuProcessKind process_kind(const json& v, const std::string& path) {
  const auto name = bytes(v, path);
  for (auto k : {core::GpuProcessKind::Compute, core::GpuProcessKind::Graphics,
                 core::GpuProcessKind::ServerClient})
    if (name == core::to_string(k)) return k;
  fail(path, "unknown value " + quoted(name));
}

core::BackendErrorCode error_code(const json& v, const std::string& path) {
  const auto name = bytes(v, path);
  auto code = core::backend_error_code(name);
  if (!code) fail(path, "unknown value " + quoted(name));
  return *code;
}

core::MemoryRegionUse region_use(const json& v, const std::string& path) {
  Object o(v, path);
  core::MemoryRegionUse r;
  r.name = bytes(o.at("name"), o.path("name"));
  r.device_local = boolean(o.at("device_local"), o.path("device_local"));
  r.total_bytes = optional(o.at("total_bytes"), o.path("total_bytes"), int_of<uint64_t>);
  r.resident_bytes = optional(o.at("resident_bytes"), o.path("resident_bytes"), int_of<uint64_t>);
  r.shared_bytes = optional(o.at("shared_bytes"), o.path("shared_bytes"), int_of<uint64_t>);
  o.finish();
  return r;
}

core::DriverProcess driver_process(const json& v, const std::string& path) {
  Object o(v, path);
  core::DriverProcess p;
  p.pid = integer<pid_t>(o.at("pid"), o.path("pid"));
  p.kind = process_kind(o.at("kind"), o.path("kind"));
  p.used_bytes = optional(o.at("used_bytes"), o.path("used_bytes"), int_of<uint64_t>);
  p.gpu_instance_id =
      optional(o.at("gpu_instance_id"), o.path("gpu_instance_id"), int_of<unsigned>);
  p.compute_instance_id =
      optional(o.at("compute_instance_id"), o.path("compute_instance_id"), int_of<unsigned>);
  p.name = optional(o.at("name"), o.path("name"), str);
  p.sm_utilization_percent =
      optional(o.at("sm_utilization_percent"), o.path("sm_utilization_percent"), int_of<unsigned>);
  p.regions = list(o.at("regions"), o.path("regions"), region_use);
  p.sharers = list(o.at("sharers"), o.path("sharers"), int_of<pid_t>);
  p.serves_clients = optional(o.at("serves_clients"), o.path("serves_clients"), str);
  p.server = optional(o.at("server"), o.path("server"), int_of<pid_t>);
  o.finish();
  return p;
}

core::GpuMemory gpu_memory(const json& v, const std::string& path) {
  Object o(v, path);
  core::GpuMemory m;
  m.total_bytes = optional(o.at("total_bytes"), o.path("total_bytes"), int_of<uint64_t>);
  m.used_bytes = optional(o.at("used_bytes"), o.path("used_bytes"), int_of<uint64_t>);
  m.free_bytes = optional(o.at("free_bytes"), o.path("free_bytes"), int_of<uint64_t>);
  m.reserved_bytes = optional(o.at("reserved_bytes"), o.path("reserved_bytes"), int_of<uint64_t>);
  o.finish();
  return m;
}

core::GpuInstance gpu_instance(const json& v, const std::string& path) {
  Object o(v, path);
  core::GpuInstance i;
  i.gpu_instance_id = integer<unsigned>(o.at("gpu_instance_id"), o.path("gpu_instance_id"));
  i.compute_instance_id =
      optional(o.at("compute_instance_id"), o.path("compute_instance_id"), int_of<unsigned>);
  i.profile = optional(o.at("profile"), o.path("profile"), str);
  i.uuid = optional(o.at("uuid"), o.path("uuid"), str);
  i.memory = gpu_memory(o.at("memory"), o.path("memory"));
  i.device_numbers = list(o.at("device_numbers"), o.path("device_numbers"), int_of<dev_t>);
  i.kind = str(o.at("kind"), o.path("kind"));
  o.finish();
  return i;
}

core::Gpu gpu_of(const json& v, const std::string& path) {
  Object o(v, path);
  core::Gpu g;
  g.index = integer<unsigned>(o.at("index"), o.path("index"));
  g.backend_index = integer<unsigned>(o.at("backend_index"), o.path("backend_index"));
  g.backend = bytes(o.at("backend"), o.path("backend"));
  g.vendor = bytes(o.at("vendor"), o.path("vendor"));
  g.key = bytes(o.at("key"), o.path("key"));
  g.name = optional(o.at("name"), o.path("name"), str);
  g.uuid = optional(o.at("uuid"), o.path("uuid"), str);
  g.minor = optional(o.at("minor"), o.path("minor"), int_of<unsigned>);
  g.pci_bus_id = optional(o.at("pci_bus_id"), o.path("pci_bus_id"), str);
  g.device_numbers = list(o.at("device_numbers"), o.path("device_numbers"), int_of<dev_t>);
  g.device_major = optional(o.at("device_major"), o.path("device_major"), int_of<unsigned>);
  g.memory = gpu_memory(o.at("memory"), o.path("memory"));
  g.utilization_percent =
      optional(o.at("utilization_percent"), o.path("utilization_percent"), int_of<unsigned>);
  g.memory_utilization_percent = optional(o.at("memory_utilization_percent"),
                                          o.path("memory_utilization_percent"), int_of<unsigned>);
  g.temperature_celsius =
      optional(o.at("temperature_celsius"), o.path("temperature_celsius"), int_of<unsigned>);
  g.power_watts = optional(o.at("power_watts"), o.path("power_watts"), real);
  g.split_mode = optional(o.at("mig_mode"), o.path("mig_mode"), boolean);
  g.details = list(o.at("details"), o.path("details"), pair_of);
  g.processes = list(o.at("processes"), o.path("processes"), driver_process);
  g.processes_error = optional(o.at("processes_error"), o.path("processes_error"), str);
  g.error = optional(o.at("error"), o.path("error"), str);
  g.known_from_kernel = optional(o.at("known_from_kernel"), o.path("known_from_kernel"), str);
  g.instances = list(o.at("instances"), o.path("instances"), gpu_instance);
  o.finish();
  return g;
}

core::BackendStatus backend_status(const json& v, const std::string& path) {
  Object o(v, path);
  core::BackendStatus b;
  b.name = bytes(o.at("name"), o.path("name"));
  b.vendor = bytes(o.at("vendor"), o.path("vendor"));
  b.available = boolean(o.at("available"), o.path("available"));
  b.error = optional(o.at("error"), o.path("error"), str);
  b.error_code = optional(o.at("error_code"), o.path("error_code"), error_code);
  b.driver_version = optional(o.at("driver_version"), o.path("driver_version"), str);
  b.library = optional(o.at("library"), o.path("library"), str);
  b.details = list(o.at("details"), o.path("details"), pair_of);
  b.warnings = list(o.at("warnings"), o.path("warnings"), str);
  o.finish();
  return b;
}

core::DriverReading driver_reading(const json& v, const std::string& path) {
  Object o(v, path);
  core::DriverReading d;
  d.backends = list(o.at("backends"), o.path("backends"), backend_status);
  d.gpus = list(o.at("gpus"), o.path("gpus"), gpu_of);
  o.finish();
  return d;
}

core::ProcessStat process_stat(const json& v, const std::string& path) {
  Object o(v, path);
  core::ProcessStat s;
  s.pid = integer<pid_t>(o.at("pid"), o.path("pid"));
  s.comm = bytes(o.at("comm"), o.path("comm"));
  const auto state = bytes(o.at("state"), o.path("state"));
  if (state.size() != 1) fail(o.path("state"), "not one byte");
  s.state = state[0];
  s.ppid = integer<pid_t>(o.at("ppid"), o.path("ppid"));
  s.pgid = integer<pid_t>(o.at("pgid"), o.path("pgid"));
  s.sid = integer<pid_t>(o.at("sid"), o.path("sid"));
  s.flags = integer<unsigned>(o.at("flags"), o.path("flags"));
  s.start_ticks = integer<uint64_t>(o.at("start_ticks"), o.path("start_ticks"));
  s.num_threads = integer<long>(o.at("num_threads"), o.path("num_threads"));
  s.rss_pages = integer<long>(o.at("rss_pages"), o.path("rss_pages"));
  s.cpu_ticks = integer<uint64_t>(o.at("cpu_ticks"), o.path("cpu_ticks"));
  o.finish();
  return s;
}

core::ContainerInfo container_info(const json& v, const std::string& path) {
  Object o(v, path);
  core::ContainerInfo c;
  c.runtime = bytes(o.at("runtime"), o.path("runtime"));
  c.id = optional(o.at("id"), o.path("id"), str);
  c.pod_uid = optional(o.at("pod_uid"), o.path("pod_uid"), str);
  c.name = optional(o.at("name"), o.path("name"), str);
  c.pod_name = optional(o.at("pod_name"), o.path("pod_name"), str);
  c.pod_namespace = optional(o.at("pod_namespace"), o.path("pod_namespace"), str);
  c.hierarchy = bytes(o.at("hierarchy"), o.path("hierarchy"));
  c.cgroup = bytes(o.at("cgroup"), o.path("cgroup"));
  c.verified = boolean(o.at("verified"), o.path("verified"));
  c.verification = bytes(o.at("verification"), o.path("verification"));
  o.finish();
  return c;
}

core::ExecutableFile executable_file(const json& v, const std::string& path) {
  Object o(v, path);
  core::ExecutableFile e;
  e.path = bytes(o.at("path"), o.path("path"));
  e.system_installed = boolean(o.at("system_installed"), o.path("system_installed"));
  o.finish();
  return e;
}

core::RankLabels rank_labels(const json& v, const std::string& path) {
  Object o(v, path);
  core::RankLabels l;
  l.rank = optional(o.at("rank"), o.path("rank"), int_of<unsigned>);
  l.local_rank = optional(o.at("local_rank"), o.path("local_rank"), int_of<unsigned>);
  l.world_size = optional(o.at("world_size"), o.path("world_size"), int_of<unsigned>);
  l.local_world_size =
      optional(o.at("local_world_size"), o.path("local_world_size"), int_of<unsigned>);
  l.run_id = optional(o.at("run_id"), o.path("run_id"), bytes);
  l.restart_count = optional(o.at("restart_count"), o.path("restart_count"), int_of<unsigned>);
  l.max_restarts = optional(o.at("max_restarts"), o.path("max_restarts"), int_of<unsigned>);
  o.finish();
  return l;
}

core::ProcessDetails process_details(const json& v, const std::string& path) {
  Object o(v, path);
  core::ProcessDetails d;
  d.cmdline = list(o.at("cmdline"), o.path("cmdline"), str);
  d.uid = optional(o.at("uid"), o.path("uid"), int_of<uid_t>);
  d.euid = optional(o.at("euid"), o.path("euid"), int_of<uid_t>);
  d.user = optional(o.at("user"), o.path("user"), str);
  d.ns_pids = list(o.at("ns_pids"), o.path("ns_pids"), int_of<pid_t>);
  d.container = optional(o.at("container"), o.path("container"), container_info);
  d.wchan = optional(o.at("wchan"), o.path("wchan"), str);
  d.exe = optional(o.at("exe"), o.path("exe"), executable_file);
  d.rank_labels = optional(o.at("rank_labels"), o.path("rank_labels"), rank_labels);
  o.finish();
  return d;
}

core::DeviceHold device_hold(const json& v, const std::string& path) {
  Object o(v, path);
  core::DeviceHold h;
  h.path = bytes(o.at("path"), o.path("path"));
  h.kind = bytes(o.at("kind"), o.path("kind"));
  h.device = optional(o.at("device"), o.path("device"), int_of<dev_t>);
  h.gpu_file = boolean(o.at("gpu_file"), o.path("gpu_file"));
  h.fds = list(o.at("fds"), o.path("fds"), int_of<int>);
  h.open_file = optional(o.at("open_file"), o.path("open_file"), str);
  o.finish();
  return h;
}

core::HostProcess host_process(const json& v, const std::string& path) {
  Object o(v, path);
  core::HostProcess p;
  p.stat = process_stat(o.at("stat"), o.path("stat"));
  p.details = optional(o.at("details"), o.path("details"), process_details);
  p.devices = list(o.at("devices"), o.path("devices"), device_hold);
  p.fds_readable = boolean(o.at("fds_readable"), o.path("fds_readable"));
  o.finish();
  return p;
}

std::pair<pid_t, pid_t> exited_parent(const json& v, const std::string& path) {
  Object o(v, path);
  std::pair<pid_t, pid_t> out{integer<pid_t>(o.at("pid"), o.path("pid")),
                              integer<pid_t>(o.at("parent"), o.path("parent"))};
  o.finish();
  return out;
}

std::pair<pid_t, uint64_t> listed_since(const json& v, const std::string& path) {
  Object o(v, path);
  std::pair<pid_t, uint64_t> out{integer<pid_t>(o.at("pid"), o.path("pid")),
                                 integer<uint64_t>(o.at("ticks"), o.path("ticks"))};
  o.finish();
  return out;
}

std::pair<pid_t, core::ProcessEnd> process_end(const json& v, const std::string& path) {
  Object o(v, path);
  std::pair<pid_t, core::ProcessEnd> out{
      integer<pid_t>(o.at("pid"), o.path("pid")),
      {integer<uint64_t>(o.at("start_ticks"), o.path("start_ticks")),
       integer<uint64_t>(o.at("end_ticks"), o.path("end_ticks")),
       boolean(o.at("held"), o.path("held")),
       optional(o.at("wait_status"), o.path("wait_status"), int_of<int>)}};
  o.finish();
  return out;
}

core::RankExit rank_exit(const json& v, const std::string& path) {
  Object o(v, path);
  core::RankExit e{integer<pid_t>(o.at("launcher"), o.path("launcher")),
                   integer<uint64_t>(o.at("launcher_start_ticks"), o.path("launcher_start_ticks")),
                   integer<pid_t>(o.at("pid"), o.path("pid")),
                   integer<uint64_t>(o.at("start_ticks"), o.path("start_ticks")),
                   optional(o.at("local_rank"), o.path("local_rank"), int_of<unsigned>),
                   integer<uint64_t>(o.at("end_ticks"), o.path("end_ticks")),
                   optional(o.at("wait_status"), o.path("wait_status"), int_of<int>)};
  o.finish();
  return e;
}

core::ProcView proc_view(const json& v, const std::string& path) {
  Object o(v, path);
  core::ProcView p;
  p.processes = list(o.at("processes"), o.path("processes"), host_process);
  // The join and every lookup binary-search the processes by pid, as the collector sorts them.
  for (size_t i = 1; i < p.processes.size(); ++i)
    if (p.processes[i].stat.pid <= p.processes[i - 1].stat.pid)
      fail(o.path("processes") + "[" + std::to_string(i) + "].stat.pid",
           "not above the previous process's pid");
  p.uninspectable = integer<size_t>(o.at("uninspectable"), o.path("uninspectable"));
  p.details_complete = boolean(o.at("details_complete"), o.path("details_complete"));
  p.warnings = list(o.at("warnings"), o.path("warnings"), str);
  p.boot_time = optional(o.at("boot_time"), o.path("boot_time"), int_of<long long>);
  p.ticks_per_second = integer<long>(o.at("ticks_per_second"), o.path("ticks_per_second"));
  p.in_child_pid_namespace =
      boolean(o.at("in_child_pid_namespace"), o.path("in_child_pid_namespace"));
  p.driver_device_files = list(o.at("driver_device_files"), o.path("driver_device_files"), str);
  p.open_files_unknown = optional(o.at("open_files_unknown"), o.path("open_files_unknown"), str);
  for (auto [pid, parent] : list(o.at("exited_parents"), o.path("exited_parents"), exited_parent))
    p.exited_parents[pid] = parent;
  for (auto [pid, ticks] : list(o.at("listed_since"), o.path("listed_since"), listed_since))
    p.listed_since[pid] = ticks;
  for (auto [pid, end] : list(o.at("ends"), o.path("ends"), process_end))
    p.ends[pid].push_back(end);
  p.rank_exits = list(o.at("rank_exits"), o.path("rank_exits"), rank_exit);
  o.finish();
  return p;
}

core::Snapshot snapshot(const json& v) {
  Object o(v, "");
  // The version first: a peer of another version may lack or rename any other field.
  const auto version = integer<int64_t>(o.at("wire"), "wire");
  if (version != kSnapshotWireVersion)
    throw WireError{"wire: version " + std::to_string(version) + ", this gpureap reads version " +
                        std::to_string(kSnapshotWireVersion),
                    true};
  const auto ns = std::chrono::nanoseconds(integer<int64_t>(o.at("timestamp_ns"), "timestamp_ns"));
  auto hostname = bytes(o.at("hostname"), "hostname");
  auto reading = driver_reading(o.at("drivers"), "drivers");
  auto view = proc_view(o.at("proc"), "proc");
  o.finish();
  const std::chrono::system_clock::time_point timestamp(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(ns));
  return core::join(std::move(view), std::move(reading), std::move(hostname), timestamp);
}

core::Error wire_error(std::string what, bool other_version = false) {
  return {
      "the snapshot's wire document is invalid: " + std::move(what),
      other_version ? "the daemon runs another gpureap version: restart it after an upgrade" : ""};
}

}  // namespace

core::Result<core::Snapshot> snapshot_from_wire(const json& wire) {
  try {
    return snapshot(wire);
  } catch (const WireError& e) {
    return wire_error(e.message, e.other_version);
  } catch (const std::exception& e) {  // e.g. out of memory for a huge document
    return wire_error(e.what());
  }
}

core::Result<core::Snapshot> snapshot_from_wire_text(std::string_view text) {
  auto doc = json::parse(text.begin(), text.end(), nullptr, false);
  if (doc.is_discarded()) return wire_error("not a JSON document (cut short?)");
  return snapshot_from_wire(doc);
}

}  // namespace gpureap::output

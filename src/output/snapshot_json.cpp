#include "output/snapshot_json.h"

#include <sys/sysmacros.h>
#include <unistd.h>

#include <cmath>

#include "core/field_count.h"
#include "core/gpu_place.h"
#include "output/json_optional.h"
#include "output/process_figures.h"
#include "text/time_format.h"

namespace gpureap::output {
namespace {

using nlohmann::json;

// The structs this document shows, with their field counts: a field added to one of them fails
// here until someone decides whether gpureap.snapshot/v1 shows it (and documents it) or not.
template <class T, std::size_t N>
constexpr bool considered = core::field_count<T>() == N;
static_assert(considered<core::Snapshot, 8>);
static_assert(considered<core::ProcView, 14>);  // rank_exits: shown by doctor (stalled-job)
static_assert(considered<core::ProcessRow, 9>);
static_assert(considered<core::GpuUse, 11>);
static_assert(considered<core::Ghost, 10>);
static_assert(considered<core::HostProcess, 4>);
static_assert(considered<core::ProcessStat, 11>);
static_assert(considered<core::ProcessDetails, 9>);  // rank_labels: shown by doctor (stalled-job)
static_assert(considered<core::ContainerInfo, 10>);
static_assert(considered<core::DeviceHold, 7>);
static_assert(considered<core::DriverReading, 2>);
static_assert(considered<core::BackendStatus, 9>);
static_assert(considered<core::Gpu, 23>);
static_assert(considered<core::GpuInstance, 7>);
static_assert(considered<core::GpuMemory, 4>);
static_assert(considered<core::MemoryRegionUse, 5>);

// The ids are what the cgroup's name claims; the names come only with a verified claim.
json container_json(const std::optional<core::ContainerInfo>& c) {
  if (!c) return nullptr;
  auto named = [&](const std::optional<std::string>& v) { return c->verified ? opt(v) : nullptr; };
  return {{"runtime", c->runtime},
          {"id", opt(c->id)},
          {"pod_uid", opt(c->pod_uid)},
          {"cgroup", c->cgroup.empty() ? json(nullptr) : json(c->cgroup)},
          {"verified", c->verified},
          {"verification", c->verification.empty() ? json(nullptr) : json(c->verification)},
          {"name", named(c->name)},
          {"pod_name", named(c->pod_name)},
          {"pod_namespace", named(c->pod_namespace)},
          {"display_name", c->display_name()}};
}

std::string device_number_text(dev_t d) {
  return std::to_string(::major(d)) + ":" + std::to_string(::minor(d));
}

// One backend: its status and, as fields of their own, the facts only it knows.
json backend_json(const core::BackendStatus& b) {
  json j = {{"name", b.name},
            {"vendor", b.vendor},
            {"available", b.available},
            {"error", opt(b.error)},
            {"error_code", b.error_code ? json(core::to_string(*b.error_code)) : json()},
            {"driver_version", opt(b.driver_version)},
            {"library", opt(b.library)}};
  for (const auto& [key, value] : b.details) j[key] = value;
  return j;
}

json regions_json(const std::vector<core::MemoryRegionUse>& regions) {
  json out = json::array();
  for (const auto& r : regions)
    out.push_back({{"name", r.name},
                   {"device_local", r.device_local},
                   {"total_bytes", opt(r.total_bytes)},
                   {"resident_bytes", opt(r.resident_bytes)},
                   {"shared_bytes", opt(r.shared_bytes)}});
  return out;
}

json gpu_uses_json(const std::vector<core::GpuUse>& uses) {
  json out = json::array();
  for (const auto& u : uses)
    out.push_back(
        {{"index", u.index},
         {"used_bytes", opt(u.used_bytes)},
         {"kind", core::to_string(u.kind)},
         {"sm_utilization_percent", opt(u.sm_utilization_percent)},
         {"regions", regions_json(u.regions)},
         {"shared_with", u.shared_with},
         {"gpu_instance_id", opt(u.gpu_instance_id)},
         {"compute_instance_id", opt(u.compute_instance_id)},
         {"instance",
          u.gpu_instance_id ? json(core::instance_place(u.index, *u.gpu_instance_id)) : json()},
         {"serves_clients", opt(u.serves_clients)},
         {"clients", u.clients},
         {"server", opt(u.server)}});
  return out;
}

json memory_json(const core::GpuMemory& m) {
  return {{"total_bytes", opt(m.total_bytes)},
          {"used_bytes", opt(m.used_bytes)},
          {"free_bytes", opt(m.free_bytes)},
          {"reserved_bytes", opt(m.reserved_bytes)}};
}

// A split GPU's instances, each with its place ("0/3": GPU 0, GPU instance 3).
json instances_json(const core::Gpu& g) {
  json out = json::array();
  for (const auto& i : g.instances) {
    json devices = json::array();
    for (dev_t d : i.device_numbers) devices.push_back(device_number_text(d));
    out.push_back({{"instance", core::instance_place(g.index, i.gpu_instance_id)},
                   {"gpu_instance_id", i.gpu_instance_id},
                   {"compute_instance_id", opt(i.compute_instance_id)},
                   {"kind", i.kind},
                   {"profile", opt(i.profile)},
                   {"uuid", opt(i.uuid)},
                   {"memory", memory_json(i.memory)},
                   {"device_numbers", devices}});
  }
  return out;
}

// The places ("N/G") a row runs in on split GPUs: where the driver lists it, else the one
// instance whose capability files it holds.
json row_instances_json(const core::Snapshot& s, const core::ProcessRow& r) {
  json out = json::array();
  for (const auto& g : s.drivers.gpus) {
    if (g.instances.empty()) continue;
    if (auto gi = core::row_instance(s, r, g.index))
      out.push_back(core::instance_place(g.index, *gi));
  }
  return out;
}

// A gone PID's verdict: who keeps its context (null for a PID of another namespace).
json ghost_json(const core::Ghost* g) {
  if (!g) return nullptr;
  return {{"keepers", g->keepers},
          {"listed_keepers", g->listed_keepers},
          {"other_holders", g->other_holders},
          {"open_files", g->open_files},
          {"exact", g->exact},
          {"leaked", g->leaked},
          {"servers", g->servers}};
}

}  // namespace

// The process that has a gone listed PID's number now: who it is, and why it is not the listed
// one. Its name is a label only.
json reused_json(const core::Snapshot& s, const std::optional<core::ReusedPid>& r) {
  if (!r) return nullptr;
  core::ProcessStat st;
  st.start_ticks = r->start_ticks;
  auto start = s.start_time(st);
  return {{"comm", r->comm},
          {"uid", opt(r->uid)},
          {"start_time", start ? json(text::iso8601_utc(*start)) : json(nullptr)},
          {"why", r->why == core::ReusedPid::Why::HoldsNoFile ? "holds-no-file"
                                                              : "started-after-listing"}};
}

json row_to_json(const core::Snapshot& s, const core::ProcessRow& r) {
  json anomalies = json::array();
  for (auto a : r.anomalies) anomalies.push_back(std::string(core::to_string(a)));
  json j{{"pid", r.pid},
         {"listed_by_driver", r.listed_by_driver},
         {"gpus", gpu_uses_json(r.gpus)},
         {"anomalies", anomalies},
         {"driver_name", opt(r.driver_name)},
         {"in_proc", r.process.has_value()},
         {"shares_context_of", r.shares_context_of},
         {"keeps", r.keeps},
         {"instances", row_instances_json(s, r)}};
  if (!r.process) {
    j["ghost"] = ghost_json(s.ghost(r.pid));
    j["reused_by"] = reused_json(s, r.reused);
    for (const char* k :
         {"comm", "state", "ppid", "pgid", "sid", "uid", "user", "start_time", "container", "wchan",
          "threads", "rss_bytes", "cpu_percent", "cpu_time_seconds", "run_time_seconds"})
      j[k] = nullptr;
    j["cmdline"] = json::array();
    j["ns_pids"] = json::array();
    j["devices"] = json::array();
    j["holds_device"] = false;
    return j;
  }
  const auto& p = *r.process;
  const core::ProcessDetails empty;
  const auto& d = p.details ? *p.details : empty;
  auto start = s.start_time(p.stat);
  json devices = json::array();
  for (const auto& h : p.devices)
    devices.push_back({{"path", h.path},
                       {"fds", h.fds},
                       {"thread", h.thread ? json(h.thread) : json()},
                       {"kind", h.kind},
                       {"device", h.device ? json(device_number_text(*h.device)) : json()},
                       {"open_file", opt(h.open_file)}});
  j["comm"] = p.stat.comm;
  j["cmdline"] = d.cmdline;
  j["state"] = std::string(1, p.stat.state);
  j["ppid"] = p.stat.ppid;
  j["pgid"] = p.stat.pgid;
  j["sid"] = p.stat.sid;
  j["uid"] = opt(d.uid);
  j["euid"] = opt(d.euid);
  j["user"] = opt(d.user);
  j["start_time"] = start ? json(text::iso8601_utc(*start)) : json(nullptr);
  j["start_ticks"] = p.stat.start_ticks;
  j["threads"] = p.stat.num_threads;
  j["rss_bytes"] = p.stat.rss_pages * ::getpagesize();
  // CPU % over the process's life, as `ps` shows it (output/process_figures.h).
  auto figures = process_figures(s, p);
  j["cpu_percent"] =
      figures.cpu_percent ? json(std::round(*figures.cpu_percent * 10) / 10) : json();
  j["cpu_time_seconds"] =
      figures.cpu ? json(static_cast<double>(figures.cpu->count()) / 1000.0) : json();
  j["run_time_seconds"] = figures.run_time ? json(figures.run_time->count()) : json();
  j["ns_pids"] = d.ns_pids;
  j["container"] = container_json(d.container);
  j["wchan"] = opt(d.wchan);
  j["devices"] = devices;
  j["holds_device"] = p.holds_device();
  j["fds_readable"] = p.fds_readable;
  return j;
}

json gpu_to_json(const core::Snapshot& s, const core::Gpu& g) {
  auto m = s.memory_summary(g);
  json devices = json::array();
  for (dev_t d : g.device_numbers) devices.push_back(device_number_text(d));
  json details = json::object();
  for (const auto& [key, value] : g.details) details[key] = value;
  return {{"index", g.index},
          {"details", details},
          {"key", g.key},
          {"vendor", g.vendor},
          {"backend", g.backend},
          {"backend_index", g.backend_index},
          {"device_numbers", devices},
          {"uuid", opt(g.uuid)},
          {"name", opt(g.name)},
          {"minor", opt(g.minor)},
          {"pci_bus_id", opt(g.pci_bus_id)},
          {"memory",
           {{"total_bytes", opt(g.memory.total_bytes)},
            {"used_bytes", opt(g.memory.used_bytes)},
            {"free_bytes", opt(g.memory.free_bytes)},
            {"reserved_bytes", opt(g.memory.reserved_bytes)},
            {"attributed_bytes", m.attributed_bytes},
            {"unattributed_bytes", opt(m.unattributed_bytes)},
            {"ghost_bytes", m.ghost_bytes},
            {"leaked_bytes", m.leaked_bytes},
            {"ghost_keepers", m.ghost_keepers}}},
          {"utilization_percent", opt(g.utilization_percent)},
          {"memory_utilization_percent", opt(g.memory_utilization_percent)},
          {"temperature_celsius", opt(g.temperature_celsius)},
          {"power_watts", opt(g.power_watts)},
          {"mig_mode", opt(g.split_mode)},
          {"processes_error", opt(g.processes_error)},
          {"error", opt(g.error)},
          {"known_from_kernel", opt(g.known_from_kernel)},
          {"instances", instances_json(g)}};
}

// The first backend, with the keys v1 has always had ("backend"); "backends" has them all.
json primary_backend_json(const core::DriverReading& drivers) {
  static const core::BackendStatus none;
  const auto& b = drivers.backends.empty() ? none : drivers.backends.front();
  const std::string* nvml = b.detail("nvml_version");
  return {{"name", b.name},
          {"available", b.available},
          {"error", opt(b.error)},
          {"driver_version", opt(b.driver_version)},
          {"nvml_version", nvml ? json(*nvml) : json()},
          {"library", opt(b.library)}};
}

json snapshot_to_json(const core::Snapshot& s) {
  json gpus = json::array();
  for (const auto& g : s.drivers.gpus) gpus.push_back(gpu_to_json(s, g));
  json processes = json::array();
  for (const auto& r : s.rows) processes.push_back(row_to_json(s, r));
  json backends = json::array();
  for (const auto& b : s.drivers.backends) backends.push_back(backend_json(b));
  return {{"schema", kSnapshotSchema},
          {"timestamp", text::iso8601_utc(s.timestamp)},
          {"hostname", s.hostname},
          {"complete", s.complete()},
          {"uninspectable_processes", s.proc.uninspectable},
          {"scan_failures", s.proc.scan_failures},
          {"in_child_pid_namespace", s.proc.in_child_pid_namespace},
          {"open_files", s.proc.open_files_unknown ? "guessed" : "exact"},
          {"open_files_unknown", opt(s.proc.open_files_unknown)},
          {"backend", primary_backend_json(s.drivers)},
          {"backends", backends},
          {"gpus", gpus},
          {"processes", processes},
          {"warnings", s.all_warnings()}};
}

std::string dump_json(const json& doc, int indent) {
  return doc.dump(indent, ' ', false, json::error_handler_t::replace);
}

}  // namespace gpureap::output

#include "output/snapshot_json.h"

#include <sys/sysmacros.h>
#include <unistd.h>

#include <cmath>

#include "core/field_count.h"
#include "core/gpu_place.h"
#include "output/json_optional.h"
#include "output/json_out.h"
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
// rank_exits: shown by doctor (stalled-job); listed_since, listed_first_process: in reused_by;
// pid_namespace: in_child_pid_namespace says what a reader needs of it
static_assert(considered<core::ProcView, 17>);
static_assert(considered<core::ProcessRow, 9>);
static_assert(considered<core::GpuUse, 11>);
static_assert(considered<core::Ghost, 10>);
static_assert(considered<core::HostProcess, 4>);
// flags, leader_exited, wait_status (a zombie's; doctor's stalled-job says it): not shown
static_assert(considered<core::ProcessStat, 13>);
static_assert(considered<core::ProcessDetails, 9>);  // rank_labels: shown by doctor (stalled-job)
static_assert(considered<core::ContainerInfo, 10>);
static_assert(considered<core::DeviceHold, 7>);
static_assert(considered<core::DriverReading, 2>);
static_assert(considered<core::BackendStatus, 10>);
static_assert(considered<core::Gpu, 24>);  // display_device_numbers: in device_numbers
static_assert(considered<core::GpuInstance, 7>);
static_assert(considered<core::GpuMemory, 4>);
static_assert(considered<core::MemoryRegionUse, 5>);

// The ids are what the cgroup's name claims; the names come only with a verified claim.
void write_container(JsonOut& o, const std::optional<core::ContainerInfo>& c) {
  if (!c) return o.null();
  auto named = [&](const std::optional<std::string>& v) {
    return c->verified ? v : std::optional<std::string>();
  };
  auto text_or_null = [](const std::string& v) {
    return v.empty() ? std::optional<std::string>() : std::optional<std::string>(v);
  };
  o.begin_object();
  member(o, "cgroup", text_or_null(c->cgroup));
  member(o, "display_name", c->display_name());
  member(o, "id", c->id);
  member(o, "name", named(c->name));
  member(o, "pod_name", named(c->pod_name));
  member(o, "pod_namespace", named(c->pod_namespace));
  member(o, "pod_uid", c->pod_uid);
  member(o, "runtime", c->runtime);
  member(o, "verification", text_or_null(c->verification));
  member(o, "verified", c->verified);
  o.end_object();
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
            {"shortage", b.shortage ? json(core::to_string(*b.shortage)) : json()},
            {"driver_version", opt(b.driver_version)},
            {"library", opt(b.library)}};
  for (const auto& [key, value] : b.details) j[key] = value;
  return j;
}

void write_regions(JsonOut& o, const std::vector<core::MemoryRegionUse>& regions) {
  o.begin_array();
  for (const auto& r : regions) {
    o.begin_object();
    member(o, "device_local", r.device_local);
    member(o, "name", r.name);
    member(o, "resident_bytes", r.resident_bytes);
    member(o, "shared_bytes", r.shared_bytes);
    member(o, "total_bytes", r.total_bytes);
    o.end_object();
  }
  o.end_array();
}

void write_gpu_uses(JsonOut& o, const std::vector<core::GpuUse>& uses) {
  o.begin_array();
  for (const auto& u : uses) {
    o.begin_object();
    member(o, "clients", u.clients);
    member(o, "compute_instance_id", u.compute_instance_id);
    member(o, "gpu_instance_id", u.gpu_instance_id);
    member(o, "index", u.index);
    member_shown(o, "instance", u.gpu_instance_id,
                 [&](unsigned id) { return core::instance_place(u.index, id); });
    member(o, "kind", core::to_string(u.kind));
    o.key("regions");
    write_regions(o, u.regions);
    member(o, "server", u.server);
    member(o, "serves_clients", u.serves_clients);
    member(o, "shared_with", u.shared_with);
    member(o, "sm_utilization_percent", u.sm_utilization_percent);
    member(o, "used_bytes", u.used_bytes);
    o.end_object();
  }
  o.end_array();
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
void write_row_instances(JsonOut& o, const core::Snapshot& s, const core::ProcessRow& r) {
  o.begin_array();
  for (const auto& g : s.drivers.gpus) {
    if (g.instances.empty()) continue;
    if (auto gi = core::row_instance(s, r, g.index)) put(o, core::instance_place(g.index, *gi));
  }
  o.end_array();
}

// A gone PID's verdict: who keeps its context (null for a PID of another namespace).
void write_ghost(JsonOut& o, const core::Ghost* g) {
  if (!g) return o.null();
  o.begin_object();
  member(o, "exact", g->exact);
  member(o, "keepers", g->keepers);
  member(o, "leaked", g->leaked);
  member(o, "listed_keepers", g->listed_keepers);
  member(o, "open_files", g->open_files);
  member(o, "other_holders", g->other_holders);
  member(o, "servers", g->servers);
  o.end_object();
}

std::optional<std::string> start_time_text(const core::Snapshot& s, const core::ProcessStat& st) {
  auto start = s.start_time(st);
  if (!start) return std::nullopt;
  return text::iso8601_utc(*start);
}

// The process that has a gone listed PID's number now: who it is, and why it is not the listed
// one. Its name is a label only.
void write_reused(JsonOut& o, const core::Snapshot& s, const std::optional<core::ReusedPid>& r) {
  if (!r) return o.null();
  core::ProcessStat st;
  st.start_ticks = r->start_ticks;
  o.begin_object();
  member(o, "comm", r->comm);
  member(o, "start_time", start_time_text(s, st));
  member(o, "uid", r->uid);
  member(o, "why",
         r->why == core::ReusedPid::Why::HoldsNoFile ? "holds-no-file" : "started-after-listing");
  o.end_object();
}

void write_devices(JsonOut& o, const std::vector<core::DeviceHold>& holds) {
  o.begin_array();
  for (const auto& h : holds) {
    o.begin_object();
    member_shown(o, "device", h.device, device_number_text);
    member(o, "fds", h.fds);
    member(o, "kind", h.kind);
    member(o, "open_file", h.open_file);
    member(o, "path", h.path);
    // The thread whose own fd table holds it; null: the process's table.
    member(o, "thread", h.thread ? std::optional<pid_t>(h.thread) : std::nullopt);
    o.end_object();
  }
  o.end_array();
}

void write_anomalies(JsonOut& o, const std::vector<core::Anomaly>& anomalies) {
  o.begin_array();
  for (auto a : anomalies) put(o, core::to_string(a));
  o.end_array();
}

// A row the driver lists whose process /proc does not show: its verdict, and nulls where the
// process's facts would be.
void write_gone_row(JsonOut& o, const core::Snapshot& s, const core::ProcessRow& r) {
  o.begin_object();
  o.key("anomalies");
  write_anomalies(o, r.anomalies);
  member(o, "cmdline", std::vector<int>{});
  for (const char* k : {"comm", "container", "cpu_percent", "cpu_time_seconds"})
    member(o, k, nullptr);
  member(o, "devices", std::vector<int>{});
  member(o, "driver_name", r.driver_name);
  o.key("ghost");
  write_ghost(o, s.ghost(r.pid));
  o.key("gpus");
  write_gpu_uses(o, r.gpus);
  member(o, "holds_device", false);
  member(o, "in_proc", false);
  o.key("instances");
  write_row_instances(o, s, r);
  member(o, "keeps", r.keeps);
  member(o, "listed_by_driver", r.listed_by_driver);
  member(o, "ns_pids", std::vector<int>{});
  member(o, "pgid", nullptr);
  member(o, "pid", r.pid);
  member(o, "ppid", nullptr);
  o.key("reused_by");
  write_reused(o, s, r.reused);
  for (const char* k : {"rss_bytes", "run_time_seconds"}) member(o, k, nullptr);
  member(o, "shares_context_of", r.shares_context_of);
  for (const char* k : {"sid", "start_time", "state", "threads", "uid", "user", "wchan"})
    member(o, k, nullptr);
  o.end_object();
}

// Keys in ascending order (output/json_out.h).
void write_row(JsonOut& o, const core::Snapshot& s, const core::ProcessRow& r) {
  if (!r.process) return write_gone_row(o, s, r);
  const auto& p = *r.process;
  const core::ProcessDetails empty;
  const auto& d = p.details ? *p.details : empty;
  // CPU % over the process's life, as `ps` shows it (output/process_figures.h).
  const auto figures = process_figures(s, p);
  o.begin_object();
  o.key("anomalies");
  write_anomalies(o, r.anomalies);
  member(o, "cmdline", d.cmdline);
  member(o, "comm", p.stat.comm);
  o.key("container");
  write_container(o, d.container);
  member_shown(o, "cpu_percent", figures.cpu_percent,
               [](double v) { return std::round(v * 10) / 10; });
  member_shown(o, "cpu_time_seconds", figures.cpu,
               [](auto ms) { return static_cast<double>(ms.count()) / 1000.0; });
  o.key("devices");
  write_devices(o, p.devices);
  member(o, "driver_name", r.driver_name);
  member(o, "euid", d.euid);
  member(o, "fds_readable", p.fds_readable);
  o.key("gpus");
  write_gpu_uses(o, r.gpus);
  member(o, "holds_device", p.holds_device());
  member(o, "in_proc", true);
  o.key("instances");
  write_row_instances(o, s, r);
  member(o, "keeps", r.keeps);
  member(o, "listed_by_driver", r.listed_by_driver);
  member(o, "ns_pids", d.ns_pids);
  member(o, "pgid", p.stat.pgid);
  member(o, "pid", r.pid);
  member(o, "ppid", p.stat.ppid);
  member(o, "rss_bytes", p.stat.rss_pages * ::getpagesize());
  member_shown(o, "run_time_seconds", figures.run_time, [](auto t) { return t.count(); });
  member(o, "shares_context_of", r.shares_context_of);
  member(o, "sid", p.stat.sid);
  member(o, "start_ticks", p.stat.start_ticks);
  member(o, "start_time", start_time_text(s, p.stat));
  member(o, "state", std::string(1, p.stat.state));
  member(o, "threads", p.stat.num_threads);
  member(o, "uid", d.uid);
  member(o, "user", d.user);
  member(o, "wchan", d.wchan);
  o.end_object();
}

}  // namespace

json row_to_json(const core::Snapshot& s, const core::ProcessRow& r) {
  JsonTree tree;
  write_row(tree, s, r);
  return tree.take();
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

namespace {

void write_snapshot(JsonOut& o, const core::Snapshot& s, const json* source) {
  json backends = json::array();
  for (const auto& b : s.drivers.backends) backends.push_back(backend_json(b));
  json gpus = json::array();
  for (const auto& g : s.drivers.gpus) gpus.push_back(gpu_to_json(s, g));
  // Keys in ascending order (output/json_out.h).
  o.begin_object();
  member(o, "backend", primary_backend_json(s.drivers));
  member(o, "backends", backends);
  member(o, "complete", s.complete());
  member(o, "gpus", gpus);
  member(o, "hostname", s.hostname);
  member(o, "in_child_pid_namespace", s.proc.in_child_pid_namespace);
  member(o, "open_files", s.proc.open_files_unknown ? "guessed" : "exact");
  member(o, "open_files_unknown", s.proc.open_files_unknown);
  o.key("processes");
  o.begin_array();
  for (const auto& r : s.rows) write_row(o, s, r);
  o.end_array();
  member(o, "scan_failures", s.proc.scan_failures);
  std::vector<std::string> shortages;
  for (core::Shortage k : s.proc.scan_shortages) shortages.emplace_back(core::to_string(k));
  member(o, "scan_shortages", shortages);
  member(o, "schema", kSnapshotSchema);
  if (source) member(o, "source", *source);
  member(o, "timestamp", text::iso8601_utc(s.timestamp));
  member(o, "uninspectable_processes", s.proc.uninspectable);
  member(o, "warnings", s.all_warnings());
  o.end_object();
}

}  // namespace

json snapshot_to_json(const core::Snapshot& s) {
  JsonTree tree;
  write_snapshot(tree, s, nullptr);
  return tree.take();
}

std::string snapshot_text(const core::Snapshot& s, int indent, const json* source) {
  JsonText text(indent);
  write_snapshot(text, s, source);
  return text.take();
}

std::string dump_json(const json& doc, int indent) {
  return doc.dump(indent, ' ', false, json::error_handler_t::replace);
}

}  // namespace gpureap::output

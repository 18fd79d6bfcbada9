// The encoding half of the wire form (snapshot_wire.h) and the byte strings both halves share.
// A field added to a struct of core/gpu.h, core/process.h or core::ProcView must be added
// here, in snapshot_wire_decode.cpp and to the round-trip test, with kSnapshotWireVersion
// raised: each encoder below asserts its struct's field count (`carried`), so the build stops
// here until it is, and the round-trip test (test_snapshot_wire.cpp) compares every field of a
// snapshot whose fields are all set, so a field left out on both sides fails there.
#include "output/snapshot_wire.h"

#include <cmath>

#include "output/json_optional.h"
#include "output/snapshot_json.h"
#include "output/wire_shared.h"

namespace gpureap::output {
namespace {

using nlohmann::json;
using wire::carried;
using wire::opt_bytes;

// Strict UTF-8 as RFC 3629 defines it (no overlong forms, no surrogates, nothing past
// U+10FFFF): exactly what nlohmann::json accepts when it dumps or parses a string.
bool valid_utf8(const std::string& s) {
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;  // overlong
      if (c == 0xED) hi = 0x9F;  // surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;  // overlong
      if (c == 0xF4) hi = 0x8F;  // past U+10FFFF
    } else {
      return false;
    }
    if (n - i < len) return false;
    const auto second = static_cast<unsigned char>(s[i + 1]);
    if (second < lo || second > hi) return false;
    for (size_t k = 2; k < len; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += len;
  }
  return true;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

json bytes_list(const std::vector<std::string>& list) {
  json out = json::array();
  for (const auto& s : list) out.push_back(wire_bytes(s));
  return out;
}

json pairs(const std::vector<std::pair<std::string, std::string>>& list) {
  json out = json::array();
  for (const auto& [key, value] : list)
    out.push_back(json::array({wire_bytes(key), wire_bytes(value)}));
  return out;
}

// JSON has no NaN or infinity: they travel as names, every finite value as itself.
json wire_real(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

static_assert(carried<core::MemoryRegionUse, 5>);
json region_wire(const core::MemoryRegionUse& r) {
  return {{"name", wire_bytes(r.name)},
          {"device_local", r.device_local},
          {"total_bytes", opt(r.total_bytes)},
          {"resident_bytes", opt(r.resident_bytes)},
          {"shared_bytes", opt(r.shared_bytes)}};
}

static_assert(carried<core::DriverProcess, 11>);
json driver_process_wire(const core::DriverProcess& p) {
  json regions = json::array();
  for (const auto& r : p.regions) regions.push_back(region_wire(r));
  return {{"pid", p.pid},
          {"kind", core::to_string(p.kind)},
          {"used_bytes", opt(p.used_bytes)},
          {"gpu_instance_id", opt(p.gpu_instance_id)},
          {"compute_instance_id", opt(p.compute_instance_id)},
          {"name", opt_bytes(p.name)},
          {"sm_utilization_percent", opt(p.sm_utilization_percent)},
          {"regions", regions},
          {"sharers", p.sharers},
          {"serves_clients", opt_bytes(p.serves_clients)},
          {"server", opt(p.server)}};
}

static_assert(carried<core::GpuMemory, 4>);
json memory_wire(const core::GpuMemory& m) {
  return {{"total_bytes", opt(m.total_bytes)},
          {"used_bytes", opt(m.used_bytes)},
          {"free_bytes", opt(m.free_bytes)},
          {"reserved_bytes", opt(m.reserved_bytes)}};
}

static_assert(carried<core::GpuInstance, 7>);
json instance_wire(const core::GpuInstance& i) {
  return {{"gpu_instance_id", i.gpu_instance_id},
          {"compute_instance_id", opt(i.compute_instance_id)},
          {"profile", opt_bytes(i.profile)},
          {"uuid", opt_bytes(i.uuid)},
          {"memory", memory_wire(i.memory)},
          {"device_numbers", i.device_numbers},
          {"kind", wire_bytes(i.kind)}};
}

static_assert(carried<core::Gpu, 23>);
json gpu_wire(const core::Gpu& g) {
  json processes = json::array();
  for (const auto& p : g.processes) processes.push_back(driver_process_wire(p));
  json instances = json::array();
  for (const auto& i : g.instances) instances.push_back(instance_wire(i));
  return {{"index", g.index},
          {"backend_index", g.backend_index},
          {"backend", wire_bytes(g.backend)},
          {"vendor", wire_bytes(g.vendor)},
          {"key", wire_bytes(g.key)},
          {"name", opt_bytes(g.name)},
          {"uuid", opt_bytes(g.uuid)},
          {"minor", opt(g.minor)},
          {"pci_bus_id", opt_bytes(g.pci_bus_id)},
          {"device_numbers", g.device_numbers},
          {"device_major", opt(g.device_major)},
          {"memory", memory_wire(g.memory)},
          {"utilization_percent", opt(g.utilization_percent)},
          {"memory_utilization_percent", opt(g.memory_utilization_percent)},
          {"temperature_celsius", opt(g.temperature_celsius)},
          {"power_watts", opt(g.power_watts, wire_real)},
          {"mig_mode", opt(g.split_mode)},
          {"details", pairs(g.details)},
          {"processes", processes},
          {"processes_error", opt_bytes(g.processes_error)},
          {"error", opt_bytes(g.error)},
          {"known_from_kernel", opt_bytes(g.known_from_kernel)},
          {"instances", instances}};
}

static_assert(carried<core::BackendStatus, 9>);
json backend_wire(const core::BackendStatus& b) {
  return {{"name", wire_bytes(b.name)},
          {"vendor", wire_bytes(b.vendor)},
          {"available", b.available},
          {"error", opt_bytes(b.error)},
          {"error_code", opt(b.error_code, [](auto c) { return core::to_string(c); })},
          {"driver_version", opt_bytes(b.driver_version)},
          {"library", opt_bytes(b.library)},
          {"details", pairs(b.details)},
          {"warnings", bytes_list(b.warnings)}};
}

static_assert(carried<core::DriverReading, 2>);
json drivers_wire(const core::DriverReading& d) {
  json backends = json::array(), gpus = json::array();
  for (const auto& b : d.backends) backends.push_back(backend_wire(b));
  for (const auto& g : d.gpus) gpus.push_back(gpu_wire(g));
  return {{"backends", backends}, {"gpus", gpus}};
}

static_assert(carried<core::ProcessStat, 11>);
json stat_wire(const core::ProcessStat& s) {
  return {{"pid", s.pid},
          {"comm", wire_bytes(s.comm)},
          {"state", wire_bytes(std::string(1, s.state))},
          {"ppid", s.ppid},
          {"pgid", s.pgid},
          {"sid", s.sid},
          {"flags", s.flags},
          {"start_ticks", s.start_ticks},
          {"num_threads", s.num_threads},
          {"rss_pages", s.rss_pages},
          {"cpu_ticks", s.cpu_ticks}};
}

static_assert(carried<core::RankLabels, 7>);
json rank_labels_wire(const core::RankLabels& l) {
  return {{"rank", opt(l.rank)},
          {"local_rank", opt(l.local_rank)},
          {"world_size", opt(l.world_size)},
          {"local_world_size", opt(l.local_world_size)},
          {"run_id", opt_bytes(l.run_id)},
          {"restart_count", opt(l.restart_count)},
          {"max_restarts", opt(l.max_restarts)}};
}

static_assert(carried<core::ProcessDetails, 9>);
static_assert(carried<core::ContainerInfo, 10>);
static_assert(carried<core::ExecutableFile, 2>);
json details_wire(const core::ProcessDetails& d) {
  return {{"cmdline", bytes_list(d.cmdline)},
          {"uid", opt(d.uid)},
          {"euid", opt(d.euid)},
          {"user", opt_bytes(d.user)},
          {"ns_pids", d.ns_pids},
          {"container", opt(d.container,
                            [](const core::ContainerInfo& c) {
                              return json{{"runtime", wire_bytes(c.runtime)},
                                          {"id", opt_bytes(c.id)},
                                          {"pod_uid", opt_bytes(c.pod_uid)},
                                          {"name", opt_bytes(c.name)},
                                          {"pod_name", opt_bytes(c.pod_name)},
                                          {"pod_namespace", opt_bytes(c.pod_namespace)},
                                          {"hierarchy", wire_bytes(c.hierarchy)},
                                          {"cgroup", wire_bytes(c.cgroup)},
                                          {"verified", c.verified},
                                          {"verification", wire_bytes(c.verification)}};
                            })},
          {"wchan", opt_bytes(d.wchan)},
          {"rank_labels", opt(d.rank_labels, rank_labels_wire)},
          {"exe", opt(d.exe, [](const core::ExecutableFile& e) {
             return json{{"path", wire_bytes(e.path)}, {"system_installed", e.system_installed}};
           })}};
}

static_assert(carried<core::DeviceHold, 6>);
json hold_wire(const core::DeviceHold& h) {
  return {{"path", wire_bytes(h.path)},
          {"kind", wire_bytes(h.kind)},
          {"device", opt(h.device)},
          {"gpu_file", h.gpu_file},
          {"fds", h.fds},
          {"open_file", opt_bytes(h.open_file)}};
}

static_assert(carried<core::HostProcess, 4>);
json process_wire(const core::HostProcess& p) {
  json devices = json::array();
  for (const auto& h : p.devices) devices.push_back(hold_wire(h));
  return {{"stat", stat_wire(p.stat)},
          {"details", p.details ? details_wire(*p.details) : json(nullptr)},
          {"devices", devices},
          {"fds_readable", p.fds_readable}};
}

static_assert(carried<core::ProcView, 13>);
static_assert(carried<core::ProcessEnd, 4>);
static_assert(carried<core::RankExit, 7>);
json proc_wire(const core::ProcView& v) {
  json processes = json::array();
  for (const auto& p : v.processes) processes.push_back(process_wire(p));
  json exited_parents = json::array();
  for (const auto& [pid, parent] : v.exited_parents)
    exited_parents.push_back({{"pid", pid}, {"parent", parent}});
  json listed_since = json::array();
  for (const auto& [pid, ticks] : v.listed_since)
    listed_since.push_back({{"pid", pid}, {"ticks", ticks}});
  json ends = json::array();
  for (const auto& [pid, lives] : v.ends)
    for (const auto& e : lives)
      ends.push_back({{"pid", pid},
                      {"start_ticks", e.start_ticks},
                      {"end_ticks", e.end_ticks},
                      {"held", e.held},
                      {"wait_status", opt(e.wait_status)}});
  json rank_exits = json::array();
  for (const auto& e : v.rank_exits)
    rank_exits.push_back({{"launcher", e.launcher},
                          {"launcher_start_ticks", e.launcher_start_ticks},
                          {"pid", e.pid},
                          {"start_ticks", e.start_ticks},
                          {"local_rank", opt(e.local_rank)},
                          {"end_ticks", e.end_ticks},
                          {"wait_status", opt(e.wait_status)}});
  return {{"processes", processes},
          {"uninspectable", v.uninspectable},
          {"details_complete", v.details_complete},
          {"warnings", bytes_list(v.warnings)},
          {"boot_time", opt(v.boot_time)},
          {"ticks_per_second", v.ticks_per_second},
          {"in_child_pid_namespace", v.in_child_pid_namespace},
          {"driver_device_files", v.driver_device_files},
          {"open_files_unknown", opt_bytes(v.open_files_unknown)},
          {"exited_parents", exited_parents},
          {"listed_since", listed_since},
          {"ends", ends},
          {"rank_exits", rank_exits}};
}

}  // namespace

json wire_bytes(const std::string& bytes) {
  if (valid_utf8(bytes)) return bytes;
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(bytes.size() * 2);
  for (char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    hex += kDigits[b >> 4];
    hex += kDigits[b & 0xF];
  }
  return {{"hex", hex}};
}

std::optional<std::string> bytes_from_wire(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (!value.is_object() || value.size() != 1 || !value.contains("hex")) return std::nullopt;
  const auto& hex = value["hex"];
  if (!hex.is_string()) return std::nullopt;
  const auto& text = hex.get_ref<const std::string&>();
  if (text.size() % 2 != 0) return std::nullopt;
  std::string out;
  out.reserve(text.size() / 2);
  for (size_t i = 0; i < text.size(); i += 2) {
    const int hi = hex_digit(text[i]), lo = hex_digit(text[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>((hi << 4) | lo);
  }
  return out;
}

// The inputs are timestamp, hostname, drivers and proc; the join derives the other fields.
static_assert(carried<core::Snapshot, 8>);
json snapshot_inputs_to_wire(const core::Snapshot& s) {
  // Nanoseconds are as fine as system_clock is here, so the count is exact.
  static_assert(std::ratio_less_equal_v<std::nano, std::chrono::system_clock::period>);
  const auto ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(s.timestamp.time_since_epoch());
  return {{"wire", kSnapshotWireVersion},
          {"timestamp_ns", static_cast<int64_t>(ns.count())},
          {"hostname", wire_bytes(s.hostname)},
          {"drivers", drivers_wire(s.drivers)},
          {"proc", proc_wire(s.proc)}};
}

std::string snapshot_inputs_to_wire_text(const core::Snapshot& snapshot) {
  return dump_json(snapshot_inputs_to_wire(snapshot), -1);
}

}  // namespace gpureap::output

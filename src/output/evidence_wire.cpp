// Both halves of the evidence wire (evidence_wire.h). A field added to core::KernelLog,
// core::KernelGpuEvent, core::OomKill or the procfs::IpcResidue structs must be added to both
// halves and to the round-trip test, with kEvidenceWireVersion raised: each encoder asserts its
// struct's field count (`carried`).
#include "output/evidence_wire.h"

#include <array>
#include <utility>

#include "output/json_optional.h"
#include "output/snapshot_wire.h"
#include "output/wire_shared.h"

namespace gpureap::output {
namespace {

using nlohmann::json;
using namespace wire;

constexpr std::array<std::pair<core::KernelEventLevel, const char*>, 3> kLevels{
    {{core::KernelEventLevel::Info, "info"},
     {core::KernelEventLevel::Warning, "warning"},
     {core::KernelEventLevel::Critical, "critical"}}};
constexpr std::array<std::pair<core::KernelStamp, const char*>, 3> kStamps{
    {{core::KernelStamp::Unknown, "unknown"},
     {core::KernelStamp::ThisBoot, "this_boot"},
     {core::KernelStamp::Future, "future"}}};

template <class E, size_t N>
const char* name_of(const std::array<std::pair<E, const char*>, N>& names, E value) {
  for (const auto& [e, name] : names)
    if (e == value) return name;
  return names.front().second;
}

template <class E, size_t N>
E value_of(const std::array<std::pair<E, const char*>, N>& names, const json& v,
           const std::string& path) {
  const auto name = bytes(v, path);
  for (const auto& [e, n] : names)
    if (name == n) return e;
  fail(path, "unknown value " + quoted(name));
}

int64_t ns_of(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

static_assert(carried<core::KernelGpuEvent, 16>);
json event_wire(const core::KernelGpuEvent& e) {
  return {{"vendor", wire_bytes(e.vendor)},
          {"kind", wire_bytes(e.kind)},
          {"label", wire_bytes(e.label)},
          {"code", e.code},
          {"pci_address", wire_bytes(e.pci_address)},
          {"gpu", opt(e.gpu)},
          {"seq", e.seq},
          {"since_boot_usec", e.since_boot_usec},
          {"time_ns", opt(e.time, ns_of)},
          {"stamp", name_of(kStamps, e.stamp)},
          {"pid", opt(e.pid)},
          {"process_name", opt_bytes(e.process_name)},
          {"detail", wire_bytes(e.detail)},
          {"name", opt_bytes(e.name)},
          {"level", name_of(kLevels, e.level)},
          {"needs_reboot", e.needs_reboot}};
}

static_assert(carried<core::OomKill, 7>);
json oom_wire(const core::OomKill& k) {
  return {{"pid", k.pid},
          {"name", wire_bytes(k.name)},
          {"uid", opt(k.uid)},
          {"memory_cgroup", k.memory_cgroup},
          {"seq", k.seq},
          {"since_boot_usec", k.since_boot_usec},
          {"text", wire_bytes(k.text)}};
}

static_assert(carried<core::KernelLog, 6>);
json kernel_wire(const core::KernelLog& log) {
  json events = json::array(), oom_kills = json::array();
  for (const auto& e : log.events) events.push_back(event_wire(e));
  for (const auto& k : log.oom_kills) oom_kills.push_back(oom_wire(k));
  return {{"read", log.read},       {"problem", opt_bytes(log.problem)},
          {"events", events},       {"oom_kills", oom_kills},
          {"records", log.records}, {"malformed", log.malformed}};
}

static_assert(carried<procfs::SysvShmSegment, 7>);
static_assert(carried<procfs::ShmFile, 4>);
static_assert(carried<procfs::IpcResidue, 3>);
json ipc_wire(const procfs::IpcResidue& r) {
  json segments = json::array(), files = json::array();
  for (const auto& s : r.segments)
    segments.push_back({{"key", s.key},
                        {"shmid", s.shmid},
                        {"size_bytes", s.size_bytes},
                        {"creator_pid", s.creator_pid},
                        {"last_pid", s.last_pid},
                        {"attached", s.attached},
                        {"uid", s.uid}});
  for (const auto& f : r.files)
    files.push_back({{"path", wire_bytes(f.path)},
                     {"size_bytes", f.size_bytes},
                     {"uid", f.uid},
                     {"owner_runs", f.owner_runs}});
  return {{"segments", segments}, {"files", files}, {"uninspected", r.uninspected}};
}

std::chrono::system_clock::time_point time_of(const json& v, const std::string& path) {
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::nanoseconds(integer<int64_t>(v, path))));
}

core::KernelGpuEvent event_of(const json& v, const std::string& path) {
  Object o(v, path);
  core::KernelGpuEvent e;
  e.vendor = bytes(o.at("vendor"), o.path("vendor"));
  e.kind = bytes(o.at("kind"), o.path("kind"));
  e.label = bytes(o.at("label"), o.path("label"));
  e.code = integer<unsigned>(o.at("code"), o.path("code"));
  e.pci_address = bytes(o.at("pci_address"), o.path("pci_address"));
  e.gpu = optional(o.at("gpu"), o.path("gpu"), int_of<unsigned>);
  e.seq = integer<uint64_t>(o.at("seq"), o.path("seq"));
  e.since_boot_usec = integer<uint64_t>(o.at("since_boot_usec"), o.path("since_boot_usec"));
  e.time = optional(o.at("time_ns"), o.path("time_ns"), time_of);
  e.stamp = value_of(kStamps, o.at("stamp"), o.path("stamp"));
  e.pid = optional(o.at("pid"), o.path("pid"), int_of<pid_t>);
  e.process_name = optional(o.at("process_name"), o.path("process_name"), str);
  e.detail = bytes(o.at("detail"), o.path("detail"));
  e.name = optional(o.at("name"), o.path("name"), str);
  e.level = value_of(kLevels, o.at("level"), o.path("level"));
  e.needs_reboot = boolean(o.at("needs_reboot"), o.path("needs_reboot"));
  o.finish();
  return e;
}

core::OomKill oom_of(const json& v, const std::string& path) {
  Object o(v, path);
  core::OomKill k;
  k.pid = integer<pid_t>(o.at("pid"), o.path("pid"));
  k.name = bytes(o.at("name"), o.path("name"));
  k.uid = optional(o.at("uid"), o.path("uid"), int_of<uid_t>);
  k.memory_cgroup = boolean(o.at("memory_cgroup"), o.path("memory_cgroup"));
  k.seq = integer<uint64_t>(o.at("seq"), o.path("seq"));
  k.since_boot_usec = integer<uint64_t>(o.at("since_boot_usec"), o.path("since_boot_usec"));
  k.text = bytes(o.at("text"), o.path("text"));
  o.finish();
  return k;
}

core::KernelLog kernel_of(const json& v, const std::string& path) {
  Object o(v, path);
  core::KernelLog log;
  log.read = boolean(o.at("read"), o.path("read"));
  log.problem = optional(o.at("problem"), o.path("problem"), str);
  log.events = list(o.at("events"), o.path("events"), event_of);
  log.oom_kills = list(o.at("oom_kills"), o.path("oom_kills"), oom_of);
  log.records = integer<uint64_t>(o.at("records"), o.path("records"));
  log.malformed = integer<uint64_t>(o.at("malformed"), o.path("malformed"));
  o.finish();
  return log;
}

procfs::SysvShmSegment segment_of(const json& v, const std::string& path) {
  Object o(v, path);
  procfs::SysvShmSegment s;
  s.key = integer<long long>(o.at("key"), o.path("key"));
  s.shmid = integer<long long>(o.at("shmid"), o.path("shmid"));
  s.size_bytes = integer<uint64_t>(o.at("size_bytes"), o.path("size_bytes"));
  s.creator_pid = integer<pid_t>(o.at("creator_pid"), o.path("creator_pid"));
  s.last_pid = integer<pid_t>(o.at("last_pid"), o.path("last_pid"));
  s.attached = integer<unsigned long>(o.at("attached"), o.path("attached"));
  s.uid = integer<uid_t>(o.at("uid"), o.path("uid"));
  o.finish();
  return s;
}

procfs::ShmFile file_of(const json& v, const std::string& path) {
  Object o(v, path);
  procfs::ShmFile f;
  f.path = bytes(o.at("path"), o.path("path"));
  f.size_bytes = integer<uint64_t>(o.at("size_bytes"), o.path("size_bytes"));
  f.uid = integer<uid_t>(o.at("uid"), o.path("uid"));
  f.owner_runs = boolean(o.at("owner_runs"), o.path("owner_runs"));
  o.finish();
  return f;
}

procfs::IpcResidue ipc_of(const json& v, const std::string& path) {
  Object o(v, path);
  procfs::IpcResidue r;
  r.segments = list(o.at("segments"), o.path("segments"), segment_of);
  r.files = list(o.at("files"), o.path("files"), file_of);
  r.uninspected = list(o.at("uninspected"), o.path("uninspected"), int_of<pid_t>);
  o.finish();
  return r;
}

std::shared_ptr<const core::Snapshot> snapshot_of(const json& v, const std::string& path) {
  auto s = snapshot_from_wire(v);
  if (!s) throw WireError{path + ": " + s.error().message, !s.error().hint.empty()};
  return std::make_shared<const core::Snapshot>(std::move(*s));
}

template <class T, class F>
std::shared_ptr<const T> shared(const json& v, const std::string& path, F&& decode) {
  if (v.is_null()) return nullptr;
  return std::make_shared<const T>(decode(v, path));
}

doctor::Evidence evidence_of(const json& v) {
  Object o(v, "");
  // The version first: a peer of another version may lack or rename any other field.
  const auto version = integer<int64_t>(o.at("evidence"), "evidence");
  if (version != kEvidenceWireVersion)
    throw WireError{"evidence: version " + std::to_string(version) +
                        ", this gpureap reads version " + std::to_string(kEvidenceWireVersion),
                    true};
  doctor::Evidence e;
  e.last = snapshot_of(o.at("last"), "last");
  e.first = o.at("first").is_null() ? e.last : snapshot_of(o.at("first"), "first");
  e.ipc = shared<procfs::IpcResidue>(o.at("ipc"), "ipc", ipc_of);
  e.kernel = shared<core::KernelLog>(o.at("kernel"), "kernel", kernel_of);
  e.work_server_log = list(o.at("work_server_log"), "work_server_log", str);
  o.finish();
  return e;
}

}  // namespace

static_assert(carried<doctor::Evidence, 6>);
json evidence_to_wire(const doctor::Evidence& e) {
  json log = json::array();
  for (const auto& line : e.work_server_log) log.push_back(wire_bytes(line));
  return {{"evidence", kEvidenceWireVersion},
          {"last", snapshot_inputs_to_wire(*e.last)},
          {"first", e.first && e.first != e.last ? snapshot_inputs_to_wire(*e.first) : json()},
          {"ipc", e.ipc ? ipc_wire(*e.ipc) : json()},
          {"kernel", e.kernel ? kernel_wire(*e.kernel) : json()},
          {"work_server_log", log}};
}

core::Result<doctor::Evidence> evidence_from_wire(const json& wire) {
  try {
    return evidence_of(wire);
  } catch (const WireError& e) {
    return core::Error{"the daemon's evidence is invalid: " + e.message,
                       e.other_version
                           ? "the daemon runs another gpureap version: restart it after an upgrade"
                           : ""};
  } catch (const std::exception& e) {  // e.g. out of memory for a huge document
    return core::Error{std::string("the daemon's evidence is invalid: ") + e.what(), ""};
  }
}

}  // namespace gpureap::output

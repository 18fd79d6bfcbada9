// The lossless wire form of a snapshot's inputs (output/snapshot_wire): every field and every
// byte comes back, the join derives the same rows and ghosts, and a bad document is refused
// with the path of the field that is wrong.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>

#include "collect/collector.h"
#include "field_compare.h"
#include "output/snapshot_json.h"
#include "output/snapshot_wire.h"
#include "output/wire_codec.h"
#include "snapshot_builders.h"

namespace gpureap {
namespace {

using namespace testing;  // gpureap::testing: the snapshot builders
using nlohmann::json;

::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\" lacks \"" << part << "\"";
}

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
const std::string kBadUtf8 = std::string("tr\xff\xfe") + "ain\x80" + "\xc0\xaf";  // not UTF-8

// Every optional of every struct set somewhere and left empty somewhere else; a ghost kept by
// orphaned workers, a leaked one, DRM regions and sharers, three backends with one down.
core::Snapshot rich_snapshot() {
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
  auto sharer = proc(6001, 6000, 6000, 'Z');
  sharer.stat.ppid = -1;  // signed fields keep their sign
  v.processes = {init, listed_live, worker, hidden, drm_holder, sharer};
  v.uninspectable = 0;
  v.details_complete = true;
  v.warnings = {"some warning", kBadUtf8};
  v.boot_time = -12;
  v.ticks_per_second = 250;
  v.in_child_pid_namespace = false;
  v.driver_device_files = {"nvml"};
  v.open_files_unknown = std::nullopt;
  v.exited_parents = {{4250, 4242}};
  v.listed_since = {{4242, kMax}};
  v.ends = {
      {7777, {{10, 20, false}, {30, kMax, true, 9}}}};  // a holder that ended, not of the join
  // A rank killed by SIGKILL, and one whose status and label are unknown.
  v.rank_exits = {{4242, 5, 7778, 11, 3u, kMax, 9}, {4242, 5, 7779, 12, std::nullopt, 40, {}}};

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

  std::vector<core::BackendReport> reports{nvml, amd, xe};
  auto reading = core::combine(std::move(reports));
  const auto at = std::chrono::system_clock::time_point(
      std::chrono::system_clock::duration(1'700'000'000'123'456'789LL));
  return core::join(std::move(v), std::move(reading), "node-\xff", at);
}

// The rich snapshot's inputs again, with the ProcView fields it leaves at their defaults set:
// between the two, every field of every struct the wire carries holds a value other than its
// default somewhere (EveryFieldOfEveryStructComesBackAsItWas checks that too).
core::Snapshot rich_snapshot_other_view() {
  const auto s = rich_snapshot();
  auto v = s.proc;
  v.uninspectable = 2;
  v.details_complete = false;
  v.in_child_pid_namespace = true;
  v.open_files_unknown = "kcmp(2) is refused here";
  v.scan_failures = {"2 processes could not be scanned (listing /proc/PID/fd: \xff)"};
  return core::join(std::move(v), s.drivers, s.hostname, s.timestamp);
}

core::Snapshot round_trip(const core::Snapshot& s) {
  auto back = output::snapshot_from_wire_text(output::snapshot_inputs_to_wire_text(s));
  EXPECT_TRUE(back.ok()) << (back.ok() ? "" : back.error().text());
  return back.ok() ? std::move(*back) : core::Snapshot{};
}

// Every field of both snapshots, inputs and what the join derived, by structured bindings.
void expect_same_fields(const core::Snapshot& a, const core::Snapshot& b) {
  testing::FieldDiff diff;
  diff.compare(a, b, "snapshot");
  std::string differences;
  for (const auto& path : diff.differences) differences += "\n  " + path;
  EXPECT_TRUE(diff.differences.empty()) << "fields that did not come back:" << differences;
}

// What the join derives, field by field.
void expect_same_derived(const core::Snapshot& a, const core::Snapshot& b) {
  EXPECT_EQ(a.timestamp, b.timestamp);
  EXPECT_EQ(a.hostname, b.hostname);
  EXPECT_EQ(a.warnings, b.warnings);
  EXPECT_EQ(a.all_warnings(), b.all_warnings());
  ASSERT_EQ(a.rows.size(), b.rows.size());
  for (size_t i = 0; i < a.rows.size(); ++i) {
    const auto &x = a.rows[i], &y = b.rows[i];
    SCOPED_TRACE("row of pid " + std::to_string(x.pid));
    EXPECT_EQ(x.pid, y.pid);
    EXPECT_EQ(x.process.has_value(), y.process.has_value());
    EXPECT_EQ(x.listed_by_driver, y.listed_by_driver);
    EXPECT_EQ(x.driver_name, y.driver_name);
    EXPECT_EQ(x.anomalies, y.anomalies);
    EXPECT_EQ(x.shares_context_of, y.shares_context_of);
    EXPECT_EQ(x.keeps, y.keeps);
    ASSERT_EQ(x.gpus.size(), y.gpus.size());
    for (size_t k = 0; k < x.gpus.size(); ++k) {
      EXPECT_EQ(x.gpus[k].index, y.gpus[k].index);
      EXPECT_EQ(x.gpus[k].used_bytes, y.gpus[k].used_bytes);
      EXPECT_EQ(x.gpus[k].kind, y.gpus[k].kind);
      EXPECT_EQ(x.gpus[k].shared_with, y.gpus[k].shared_with);
      EXPECT_EQ(x.gpus[k].regions.size(), y.gpus[k].regions.size());
    }
  }
  ASSERT_EQ(a.ghosts.size(), b.ghosts.size());
  for (size_t i = 0; i < a.ghosts.size(); ++i) {
    const auto &x = a.ghosts[i], &y = b.ghosts[i];
    EXPECT_EQ(x.pid, y.pid);
    EXPECT_EQ(x.gpus, y.gpus);
    EXPECT_EQ(x.bytes, y.bytes);
    EXPECT_EQ(x.keepers, y.keepers);
    EXPECT_EQ(x.listed_keepers, y.listed_keepers);
    EXPECT_EQ(x.other_holders, y.other_holders);
    EXPECT_EQ(x.open_files, y.open_files);
    EXPECT_EQ(x.exact, y.exact);
    EXPECT_EQ(x.leaked, y.leaked);
  }
  for (const auto& gpu : a.drivers.gpus) {
    auto m = a.memory_summary(gpu), n = b.memory_summary(gpu);
    EXPECT_EQ(m.attributed_bytes, n.attributed_bytes);
    EXPECT_EQ(m.ghost_bytes, n.ghost_bytes);
    EXPECT_EQ(m.leaked_bytes, n.leaked_bytes);
    EXPECT_EQ(m.unattributed_bytes, n.unattributed_bytes);
    EXPECT_EQ(m.ghost_keepers, n.ghost_keepers);
  }
  // And everything the public document shows of them.
  EXPECT_EQ(output::dump_json(output::snapshot_to_json(a)),
            output::dump_json(output::snapshot_to_json(b)));
}

TEST(SnapshotWire, RichSnapshotRoundTripsEveryFieldAndTheJoinAgain) {
  const auto s = rich_snapshot();
  // The test means something only if the join found what the inputs are made for.
  ASSERT_NE(s.ghost(4242), nullptr);
  EXPECT_EQ(s.ghost(4242)->keepers, std::vector<pid_t>{4250});
  ASSERT_NE(s.ghost(9999), nullptr);
  ASSERT_NE(s.row(6000), nullptr);
  ASSERT_EQ(s.drivers.backends.size(), 3u);

  const auto wire = output::snapshot_inputs_to_wire(s);
  const auto back = round_trip(s);
  EXPECT_EQ(output::snapshot_inputs_to_wire(back), wire);
  expect_same_derived(s, back);

  // The bytes themselves, not only their encoding.
  ASSERT_NE(back.find(100), nullptr);
  EXPECT_EQ(back.find(100)->stat.comm, kBadUtf8);
  EXPECT_EQ(back.find(100)->details->cmdline, s.find(100)->details->cmdline);
  EXPECT_EQ(back.find(100)->stat.start_ticks, kMax);
  EXPECT_EQ(back.find(1)->stat.cpu_ticks, 4321u);
  EXPECT_EQ(back.find(6001)->stat.ppid, -1);
  EXPECT_EQ(back.find(6001)->stat.state, 'Z');
  EXPECT_EQ(back.hostname, "node-\xff");
  EXPECT_EQ(back.proc.boot_time, -12);
  EXPECT_EQ(back.proc.exited_parents, s.proc.exited_parents);
  EXPECT_EQ(back.proc.listed_since, s.proc.listed_since);
  EXPECT_EQ(back.proc.ends, s.proc.ends);
  EXPECT_EQ(back.proc.rank_exits, s.proc.rank_exits);
  EXPECT_EQ(back.drivers.gpus[0].memory.total_bytes, kMax);
  EXPECT_EQ(back.drivers.gpus[0].power_watts, 512.125);
  EXPECT_TRUE(std::isnan(*back.drivers.gpus[1].power_watts));
  EXPECT_EQ(back.drivers.gpus[2].power_watts, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(back.drivers.gpus[0].split_mode, false);
  EXPECT_EQ(back.drivers.gpus[1].split_mode, true);
  EXPECT_EQ(back.drivers.gpus[2].split_mode, std::nullopt);
  EXPECT_EQ(back.drivers.backends[2].error_code, core::BackendErrorCode::NotAnswering);
  EXPECT_EQ(back.drivers.gpus[2].processes[0].regions[1].resident_bytes, 1u);
  EXPECT_EQ(back.find(1)->details->container, s.find(1)->details->container);
  EXPECT_EQ(back.timestamp.time_since_epoch().count(), 1'700'000'000'123'456'789LL);

  // How the choices look on the wire.
  const auto& comm = wire["proc"]["processes"][1]["stat"]["comm"];
  EXPECT_EQ(comm, json({{"hex", "7472fffe61696e80c0af"}}));
  EXPECT_EQ(wire["proc"]["processes"][0]["stat"]["comm"], "p1");
  EXPECT_TRUE(wire["drivers"]["gpus"][0]["memory"]["total_bytes"].is_number_unsigned());
  EXPECT_EQ(wire["drivers"]["gpus"][0]["processes"][2]["kind"], "mps");
  EXPECT_EQ(wire["drivers"]["backends"][2]["error_code"], "not-answering");
  EXPECT_TRUE(wire["drivers"]["gpus"][1]["name"].is_null());
  EXPECT_EQ(wire["wire"], output::kSnapshotWireVersion);
}

// A field forgotten in both the encoder and the decoder would still give equal wire documents:
// so every field of every struct is compared after the trip, and the data must set every one.
TEST(SnapshotWire, EveryFieldOfEveryStructComesBackAsItWas) {
  testing::FieldCoverage coverage;
  for (const auto& s : {rich_snapshot(), rich_snapshot_other_view()}) {
    coverage.visit(s.drivers);
    coverage.visit(s.proc);
    expect_same_fields(s, round_trip(s));
  }
  std::string never_set;
  for (const auto& field : coverage.never_set()) never_set += "\n  " + field;
  EXPECT_TRUE(never_set.empty())
      << "fields the test data leaves at their default (set them in rich_snapshot; a field's "
         "number counts from 0 in declaration order):"
      << never_set;
}

TEST(SnapshotWire, ByteStringsOfEveryKindRoundTripAndStayValidJson) {
  std::vector<std::string> cases{"",
                                 "plain",
                                 "caf\xc3\xa9",
                                 "\xf0\x9f\x98\x80",
                                 "\xff",
                                 "\xed\xa0\x80" /* a surrogate */,
                                 "\xe0\x80\x80" /* overlong */,
                                 "\xf4\x90\x80\x80" /* past U+10FFFF */,
                                 "\xc3" /* cut short */,
                                 std::string("nul\0inside", 10)};
  std::string all, ascii;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  for (int b = 0; b < 128; ++b) ascii += static_cast<char>(b);  // every character JSON escapes
  cases.push_back(all);
  cases.push_back(ascii);
  auto decoded = [](const std::string& text) {
    auto tape = output::wire::Tape::read(text);
    if (!tape) return std::string("(not JSON)");
    return output::wire::decode<std::string>(tape->root(), "");
  };
  for (const auto& s : cases) {
    std::string text;
    output::write_bytes(text, s);
    // The strict parser refuses invalid UTF-8 and anything not JSON: the wire never has any.
    EXPECT_TRUE(json::accept(text)) << text;
    EXPECT_EQ(decoded(text), s);
  }
  std::string text;
  output::write_bytes(text, "caf\xc3\xa9");
  EXPECT_EQ(text, "\"caf\xc3\xa9\"");
  text.clear();
  output::write_bytes(text, "\xed\xa0\x80");
  EXPECT_EQ(text, R"({"hex":"eda080"})");
  for (const char* bad : {R"({"hex": "abc"})" /* odd length */,
                          R"({"hex": "AB"})" /* not lowercase */, R"({"hex": "ab", "x": 1})", "5"})
    EXPECT_THROW(decoded(bad), output::wire::WireError) << bad;
}

TEST(SnapshotWire, SnapshotOfThisProcessesRealProcRoundTrips) {
  // A stand-in GPU file this process holds, so the scan reads its details and open files.
  char tmpl[] = "/tmp/gpureap-wire-XXXXXX";
  const std::string dev = ::mkdtemp(tmpl);
  { std::ofstream(dev + "/nvidia0") << ""; }
  const int fd = ::open((dev + "/nvidia0").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  auto collector = collect::Collector::open({"/proc", dev}, nullptr);
  ASSERT_TRUE(collector.ok()) << collector.error().text();
  const auto s = collector->collect();
  ::close(fd);
  std::filesystem::remove_all(dev);
  const auto* self = s.find(::getpid());
  ASSERT_NE(self, nullptr);
  ASSERT_TRUE(self->details.has_value());  // a holder: its details were read
  ASSERT_GT(s.proc.processes.size(), 1u);

  const auto back = round_trip(s);
  EXPECT_EQ(output::snapshot_inputs_to_wire(back), output::snapshot_inputs_to_wire(s));
  expect_same_derived(s, back);
  expect_same_fields(s, back);
  ASSERT_NE(back.find(::getpid()), nullptr);
  EXPECT_EQ(back.find(::getpid())->details->cmdline, self->details->cmdline);
}

// The error of decoding the rich snapshot's wire after `edit`.
std::string error_after(const std::function<void(json&)>& edit) {
  auto wire = output::snapshot_inputs_to_wire(rich_snapshot());
  edit(wire);
  auto r = output::snapshot_from_wire(wire);
  if (r.ok()) return "(decoded)";
  return r.error().text();
}

TEST(SnapshotWire, RefusesAMissingFieldByItsPath) {
  EXPECT_TRUE(
      Contains(error_after([](json& w) { w["proc"]["processes"][3]["stat"].erase("state"); }),
               "proc.processes[3].stat.state: missing"));
  EXPECT_TRUE(Contains(error_after([](json& w) { w["drivers"]["gpus"][1].erase("power_watts"); }),
                       "drivers.gpus[1].power_watts: missing"));
  EXPECT_TRUE(Contains(error_after([](json& w) { w.erase("hostname"); }), "hostname: missing"));
}

TEST(SnapshotWire, RefusesAMistypedFieldByItsPath) {
  EXPECT_TRUE(
      Contains(error_after([](json& w) { w["proc"]["processes"][3]["stat"]["state"] = 83; }),
               "proc.processes[3].stat.state: not a string"));
  EXPECT_TRUE(
      Contains(error_after([](json& w) { w["proc"]["processes"][3]["stat"]["state"] = "SS"; }),
               "proc.processes[3].stat.state: not one byte"));
  EXPECT_TRUE(
      Contains(error_after([](json& w) { w["drivers"]["gpus"][0]["memory"]["used_bytes"] = 1.5; }),
               "drivers.gpus[0].memory.used_bytes: not an integer"));
  EXPECT_TRUE(Contains(error_after([](json& w) { w["drivers"]["gpus"][0]["index"] = -1; }),
                       "drivers.gpus[0].index: out of range"));
  EXPECT_TRUE(
      Contains(error_after([](json& w) { w["proc"]["processes"][0]["stat"]["pid"] = 1ll << 40; }),
               "proc.processes[0].stat.pid: out of range"));
  EXPECT_TRUE(Contains(error_after([](json& w) { w["drivers"]["gpus"][0]["split_mode"] = "no"; }),
                       "drivers.gpus[0].split_mode: not a boolean"));
  EXPECT_TRUE(
      Contains(error_after([](json& w) { w["proc"]["processes"][1]["devices"] = json::object(); }),
               "proc.processes[1].devices: not an array"));
  EXPECT_TRUE(Contains(
      error_after([](json& w) { w["drivers"]["gpus"][0]["details"][1] = json::array({"k"}); }),
      "drivers.gpus[0].details[1]: not a [key, value] pair"));
  EXPECT_TRUE(Contains(
      error_after([](json& w) { w["proc"]["processes"][1]["stat"]["comm"]["hex"] = "zz"; }),
      "proc.processes[1].stat.comm: not a string"));
  EXPECT_TRUE(Contains(error_after([](json& w) { w["proc"]["processes"][2]["stat"]["pid"] = 1; }),
                       "proc.processes[2].stat.pid: not above the previous process's pid"));
  EXPECT_TRUE(Contains(error_after([](json& w) { w["proc"]["processes"][0]["extra"] = 1; }),
                       "proc.processes[0].extra: unknown field"));
  EXPECT_TRUE(
      Contains(error_after([](json& w) { w = json::array(); }), "(document): not an object"));
}

TEST(SnapshotWire, RefusesAMapsKeyGivenTwice) {
  EXPECT_TRUE(Contains(error_after([](json& w) {
                         auto& since = w["proc"]["listed_since"];
                         since.push_back(since[0]);
                       }),
                       "proc.listed_since[1][0]: the key of an earlier entry"));
  EXPECT_TRUE(Contains(error_after([](json& w) { w["proc"]["ends"][0] = json::array({7777}); }),
                       "proc.ends[0]: not a [key, value] pair"));
}

TEST(SnapshotWire, RefusesAnUnknownEnumName) {
  EXPECT_TRUE(Contains(
      error_after([](json& w) { w["drivers"]["gpus"][0]["processes"][0]["kind"] = "Compute"; }),
      "drivers.gpus[0].processes[0].kind: unknown value \"Compute\""));
  EXPECT_TRUE(Contains(
      error_after([](json& w) { w["drivers"]["backends"][2]["error_code"] = "on-\x1b[31mfire"; }),
      "drivers.backends[2].error_code: unknown value \"on-\\u001b[31mfire\""));
}

TEST(SnapshotWire, RefusesAnotherVersionBeforeAnyOtherField) {
  auto text = error_after([](json& w) {
    w["wire"] = output::kSnapshotWireVersion + 1;
    w.erase("proc");
  });
  EXPECT_TRUE(Contains(text, "wire: version " + std::to_string(output::kSnapshotWireVersion + 1) +
                                 ", this gpureap reads version " +
                                 std::to_string(output::kSnapshotWireVersion)));
  EXPECT_TRUE(Contains(text, "restart it after an upgrade"));
  EXPECT_TRUE(Contains(error_after([](json& w) { w.erase("wire"); }), "wire: missing"));
}

TEST(SnapshotWire, RefusesATruncatedDocument) {
  const auto text = output::snapshot_inputs_to_wire_text(rich_snapshot());
  for (size_t cut : {size_t{0}, size_t{1}, text.size() / 2, text.size() - 1}) {
    auto r = output::snapshot_from_wire_text(std::string_view(text).substr(0, cut));
    ASSERT_FALSE(r.ok()) << cut;
    EXPECT_TRUE(Contains(r.error().message, "not a JSON document (cut short?)"));
  }
  EXPECT_TRUE(output::snapshot_from_wire_text(text).ok());
}

}  // namespace
}  // namespace gpureap

#include <gtest/gtest.h>

#include <map>

#include "doctor/diagnose.h"
#include "snapshot_builders.h"
#include "text/enum_names.h"

namespace gpureap::doctor {
namespace {

using namespace gpureap::testing;

std::vector<Finding> run(const core::Snapshot& first, const core::Snapshot& last,
                         procfs::IpcResidue ipc = {}, std::optional<unsigned> gpu = std::nullopt) {
  return diagnose({first, last, std::move(ipc), gpu,
                   [](const core::HostProcess& p) { return p.stat.comm == "nvidia-persiste"; }});
}

std::vector<Finding> run(const core::Snapshot& s) {
  return run(s, s);
}

const Finding* find(const std::vector<Finding>& fs, const std::string& code, pid_t pid = 0) {
  for (const auto& f : fs)
    if (to_string(f.code) == code &&
        (!pid || std::find(f.pids.begin(), f.pids.end(), pid) != f.pids.end()))
      return &f;
  return nullptr;
}

bool remedy_has(const Finding& f, const std::string& text) {
  return std::any_of(f.remedy.begin(), f.remedy.end(),
                     [&](const RemedyStep& r) { return r.line().find(text) != std::string::npos; });
}

// The facet of `code` about `pid`, or null.
const Facet* facet(const Finding& f, FindingCode code, pid_t pid) {
  for (const auto& x : f.facets)
    if (x.code == code && x.pid == pid) return &x;
  return nullptr;
}

// The findings above info that name `pid`.
size_t problems_naming(const std::vector<Finding>& fs, pid_t pid) {
  return static_cast<size_t>(std::count_if(fs.begin(), fs.end(), [&](const Finding& f) {
    return f.severity != Severity::Info &&
           std::find(f.pids.begin(), f.pids.end(), pid) != f.pids.end();
  }));
}

core::Snapshot later(std::vector<core::HostProcess> ps, std::vector<core::Gpu> gpus) {
  SnapshotOptions o;
  o.at += std::chrono::seconds(5);
  return make_snapshot(std::move(ps), std::move(gpus), o);
}

TEST(DoctorRules, HealthyMachineHasNothingAboveInfo) {
  auto s = make_snapshot({proc(1, 0, 1), proc(10, 1, 10), holder(200, 10, 200)},
                         {gpu(0, 0, 8 * GiB, {listed(200, 8 * GiB)})});
  auto fs = run(s);
  EXPECT_EQ(worst(fs), Severity::Info);
  EXPECT_TRUE(fs.empty());
}

TEST(DoctorRules, GonePidKeptByInheritedWorkers) {
  auto s = make_snapshot({proc(1, 0, 1), holder(4250, 1, 4242), holder(4251, 1, 4242)},
                         {gpu(0, 0, 8 * GiB, {listed(4242, 8 * GiB)})});
  auto fs = run(s);
  const auto* f = find(fs, "no-such-process", 4242);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::Critical);
  EXPECT_EQ(f->memory_bytes, 8 * GiB);
  EXPECT_EQ(f->gpus, std::vector<unsigned>{0});
  EXPECT_EQ(f->pids, (std::vector<pid_t>{4242, 4250, 4251}));
  EXPECT_NE(f->evidence[0].find("PID 4242 is listed on GPU 0 with 8.0 GiB but is not in /proc"),
            std::string::npos);
  EXPECT_NE(f->evidence[1].find("PID 4250 (p4250) holds /dev/nvidia0 on fd 5"), std::string::npos);
  // One remedy, one step: the kill that ends both keepers, saying so.
  ASSERT_EQ(f->remedy.size(), 1u);
  EXPECT_EQ(f->remedy[0].kind, StepKind::Run);
  EXPECT_EQ(f->remedy[0].command, "gpureap kill 4242");
  EXPECT_EQ(f->remedy[0].why,
            "ends its keepers (PIDs 4250 4251) and waits for the memory to come back");
  EXPECT_EQ(f->summary, "GPU 0: 8.0 GiB held by gone PID 4242 through 2 workers");
  // What the keepers are is part of this one finding: each keeper's inherited-holder and
  // orphan-holder are its facets, not findings of their own.
  for (pid_t keeper : {4250, 4251}) {
    const auto* inh = facet(*f, FindingCode::InheritedHolder, keeper);
    ASSERT_NE(inh, nullptr) << keeper;
    EXPECT_EQ(inh->severity, Severity::Warning);
    EXPECT_NE(inh->text.find("inherited the GPU files of gone PID 4242"), std::string::npos)
        << inh->text;
    const auto* orphan = facet(*f, FindingCode::OrphanHolder, keeper);
    ASSERT_NE(orphan, nullptr) << keeper;
    EXPECT_NE(orphan->text.find("is an orphan"), std::string::npos) << orphan->text;
    EXPECT_EQ(problems_naming(fs, keeper), 1u);
  }
  EXPECT_TRUE(f->has(FindingCode::InheritedHolder));
  EXPECT_TRUE(f->has(FindingCode::OrphanHolder));
  EXPECT_EQ(f->codes(),
            (std::vector<FindingCode>{FindingCode::NoSuchProcess, FindingCode::InheritedHolder,
                                      FindingCode::OrphanHolder}));
  EXPECT_EQ(find(fs, "inherited-holder"), nullptr);
  EXPECT_EQ(find(fs, "orphan-holder"), nullptr);
  EXPECT_EQ(fs.size(), 1u);
  EXPECT_EQ(problems_naming(fs, 4242), 1u);
}

TEST(DoctorRules, LeakedWhenTheMemoryStaysAndNothingHoldsIt) {
  auto first = make_snapshot({proc(1, 0, 1)}, {gpu(0, 0, 8 * GiB, {listed(999, 8 * GiB)})});
  auto last = later({proc(1, 0, 1)}, {gpu(0, 0, 8 * GiB, {listed(999, 8 * GiB)})});
  auto fs = run(first, last);
  const auto* f = find(fs, "leaked-memory", 999);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::Critical);
  EXPECT_EQ(f->memory_bytes, 8 * GiB);
  EXPECT_TRUE(remedy_has(*f, "gpureap reset --gpu 0"));
  EXPECT_EQ(find(fs, "releasing"), nullptr);
}

TEST(DoctorRules, ALeakWhoseResetAPausedJobBlocksSaysSo) {
  // Gone 999 leaked 8 GiB on GPU 0, where job 300 is stopped with its own 2 GiB.
  auto scene = [](auto make) {
    return make(
        std::vector<core::HostProcess>{proc(1, 0, 1), holder(300, 1, 300, 0, 'T')},
        std::vector<core::Gpu>{gpu(0, 0, 10 * GiB, {listed(999, 8 * GiB), listed(300, 2 * GiB)})});
  };
  auto first = scene([](auto ps, auto gs) { return make_snapshot(ps, gs); });
  auto last = scene([](auto ps, auto gs) { return later(ps, gs); });
  auto fs = run(first, last);
  const auto* f = find(fs, "leaked-memory", 999);
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(remedy_has(*f,
                         "gpureap reset --gpu 0   # reset is blocked by paused PID 300; "
                         "resume or end it first"));
  // Nothing paused: the reset's usual words.
  auto calm = run(make_snapshot({proc(1, 0, 1)}, {gpu(0, 0, 8 * GiB, {listed(999, 8 * GiB)})}),
                  later({proc(1, 0, 1)}, {gpu(0, 0, 8 * GiB, {listed(999, 8 * GiB)})}));
  const auto* g = find(calm, "leaked-memory", 999);
  ASSERT_NE(g, nullptr);
  EXPECT_FALSE(remedy_has(*g, "paused"));
  EXPECT_TRUE(remedy_has(*g, "refused while anything uses the GPU"));
}

TEST(DoctorRules, ReleasingWhenTheGonePidLeavesTheListsBetweenSamples) {
  auto first = make_snapshot({proc(1, 0, 1)}, {gpu(0, 0, 8 * GiB, {listed(999, 8 * GiB)})});
  auto last = later({proc(1, 0, 1)}, {gpu(0, 0, 0, {})});
  auto fs = run(first, last);
  const auto* f = find(fs, "releasing", 999);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::Info);
  EXPECT_EQ(f->memory_bytes, 8 * GiB);
  EXPECT_EQ(find(fs, "leaked-memory"), nullptr);
}

TEST(DoctorRules, ReleasingWhenTheGonePidsMemoryDrops) {
  auto first = make_snapshot({proc(1, 0, 1)}, {gpu(0, 0, 8 * GiB, {listed(999, 8 * GiB)})});
  auto last = later({proc(1, 0, 1)}, {gpu(0, 0, 2 * GiB, {listed(999, 2 * GiB)})});
  auto fs = run(first, last);
  ASSERT_NE(find(fs, "releasing", 999), nullptr);
  EXPECT_EQ(find(fs, "leaked-memory"), nullptr);
}

std::vector<Finding> run_with(const core::Snapshot& first, const core::Snapshot& last,
                              UnattributedThreshold threshold) {
  DoctorInput in{first, last, {}, std::nullopt, nullptr, threshold};
  return diagnose(in);
}

TEST(DoctorRules, UnattributedMemoryBelowTheThresholdIsNoFinding) {
  // A few hundred MiB the driver keeps for itself on an idle, healthy GPU.
  auto s = make_snapshot({proc(1, 0, 1)}, {gpu(0, 0, 400 * MiB, {})});
  auto fs = run(s, s);
  EXPECT_TRUE(fs.empty()) << to_string(fs.front().code);
}

TEST(DoctorRules, UnattributedMemoryAboveTheThresholdIsAWarningNotALeak) {
  auto first = make_snapshot({proc(1, 0, 1)}, {gpu(0, 0, 3 * GiB, {})});
  auto last = later({proc(1, 0, 1)}, {gpu(0, 0, 3 * GiB, {})});
  auto fs = run(first, last);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(to_string(fs[0].code), "unattributed-memory");
  EXPECT_EQ(fs[0].severity, Severity::Warning);
  EXPECT_EQ(fs[0].memory_bytes, 3 * GiB);
  EXPECT_TRUE(fs[0].pids.empty());
  // A higher threshold (absolute, or a share of the GPU's 100 GiB) silences it.
  EXPECT_TRUE(run_with(first, last, {4 * GiB, std::nullopt}).empty());
  EXPECT_TRUE(run_with(first, last, {std::nullopt, 0.05}).empty());
  EXPECT_EQ(run_with(first, last, {512 * MiB, 0.02}).size(), 1u);
  // ...and memory that is dropping is still being released.
  auto dropping = later({proc(1, 0, 1)}, {gpu(0, 0, 2 * GiB, {})});
  EXPECT_NE(find(run(first, dropping), "releasing"), nullptr);
}

TEST(DoctorRules, UnattributedMemoryLeftByAnExitedProcessIsLeaked) {
  // PID 300 is listed with 6 GiB at the first sample; by the last it has left the lists but the
  // GPU's used memory stayed: its memory did not come back.
  auto first = make_snapshot({proc(1, 0, 1), proc(10, 1, 10), holder(300, 10, 300)},
                             {gpu(0, 0, 6 * GiB + 200 * MiB, {listed(300, 6 * GiB)})});
  auto last = later({proc(1, 0, 1), proc(10, 1, 10)}, {gpu(0, 0, 6 * GiB + 200 * MiB, {})});
  auto fs = run(first, last);
  const auto* f = find(fs, "leaked-memory");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::Critical);
  EXPECT_TRUE(remedy_has(*f, "gpureap reset --gpu 0"));
  EXPECT_EQ(find(fs, "unattributed-memory"), nullptr);
  // The same memory already there at the first sample, with nothing leaving: only a warning.
  auto before =
      make_snapshot({proc(1, 0, 1), proc(10, 1, 10)}, {gpu(0, 0, 6 * GiB + 200 * MiB, {})});
  auto calm = run(before, last);
  EXPECT_EQ(find(calm, "leaked-memory"), nullptr);
  EXPECT_NE(find(calm, "unattributed-memory"), nullptr);
}

TEST(DoctorRules, UnattributedThresholdParses) {
  auto both = parse_unattributed_threshold("512MiB, 2%");
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->bytes, 512 * MiB);
  EXPECT_DOUBLE_EQ(*both->ratio, 0.02);
  EXPECT_EQ(both->for_total(100 * GiB), 2 * GiB);
  EXPECT_EQ(both->for_total(std::nullopt), 512 * MiB);
  auto pct = parse_unattributed_threshold("5%");
  ASSERT_TRUE(pct.ok());
  EXPECT_FALSE(pct->bytes);
  for (const char* bad : {"", "lots", "120%", "1GiB,2GiB", "5%,6%", ","})
    EXPECT_FALSE(parse_unattributed_threshold(bad).ok()) << bad;
  UnattributedThreshold def;
  EXPECT_EQ(def.for_total(16 * GiB), 1 * GiB);
  EXPECT_EQ(def.for_total(200 * GiB), 2 * GiB);
}

TEST(DoctorRules, ForeignNamespace) {
  SnapshotOptions o;
  o.child_ns = true;
  auto s = make_snapshot({proc(1, 0, 1)}, {gpu(0, 0, 8 * GiB, {listed(77777, 8 * GiB)})}, o);
  auto fs = run(s);
  const auto* f = find(fs, "foreign-namespace", 77777);
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(remedy_has(*f, "--pid=host"));
  EXPECT_TRUE(remedy_has(*f, "hostPID"));
  EXPECT_EQ(find(fs, "leaked-memory"), nullptr);
  EXPECT_EQ(find(fs, "no-such-process"), nullptr);
}

TEST(DoctorRules, StateFindings) {
  auto d = holder(301, 10, 301, 0, 'D');
  d.details->wchan = "nfs_wait_on_request";
  auto s = make_snapshot({proc(1, 0, 1), proc(10, 1, 10), holder(300, 10, 300, 0, 'T'), d,
                          holder(302, 10, 302), proc(303, 302, 302, 'Z'), proc(304, 302, 302, 'Z')},
                         {gpu(0, 0, 6 * GiB, {listed(300, 6 * GiB)})});
  auto fs = run(s);
  const auto* stopped = find(fs, "stopped-holder", 300);
  ASSERT_NE(stopped, nullptr);
  EXPECT_EQ(stopped->memory_bytes, 6 * GiB);
  EXPECT_TRUE(remedy_has(*stopped, "kill -CONT 300"));
  const auto* dstate = find(fs, "uninterruptible-holder", 301);
  ASSERT_NE(dstate, nullptr);
  EXPECT_NE(dstate->evidence.back().find("nfs_wait_on_request"), std::string::npos);
  const auto* z = find(fs, "unreaped-zombies", 302);
  ASSERT_NE(z, nullptr);
  EXPECT_NE(z->evidence.back().find("303 304"), std::string::npos);
}

TEST(DoctorRules, DriverFindings) {
  core::ProcView v;
  v.driver_device_files = {"nvml"};
  core::BackendReport b;
  b.error = "NVML library and kernel driver versions differ";
  b.error_code = core::BackendErrorCode::VersionMismatch;
  auto s = core::join(v, core::combine({b}), "h", {});
  auto fs = run(s);
  ASSERT_NE(find(fs, "driver-mismatch"), nullptr);
  EXPECT_EQ(worst(fs), Severity::Critical);

  b.error_code = core::BackendErrorCode::LibraryNotFound;
  v.driver_device_files = {};
  auto none = core::join(v, core::combine({b}), "h", {});
  auto fs2 = run(none);
  ASSERT_NE(find(fs2, "driver-missing"), nullptr);
  EXPECT_EQ(worst(fs2), Severity::Info);  // a machine without NVIDIA devices is not unhealthy
}

// Helpers of the out-of-descriptors tests, in a namespace of their own (unity batches).
namespace short_of_descriptors {

// NVML as it reports a load that failed for want of a descriptor (backend/nvml/library.cpp).
core::BackendReport nvml_short_of_descriptors() {
  core::BackendReport b;
  b.name = "nvml";
  b.vendor = "nvidia";
  b.error =
      "libnvidia-ml.so.1 could not be loaded: gpureap had no file descriptor to open it (Too many "
      "open files; the loader said: libnvidia-ml.so.1: cannot open shared object file: No such "
      "file or directory); gpureap ran out of file descriptors (its limit is 6, hard limit 6); "
      "raise the limit of open files, hard and soft, and run it again: `ulimit -Hn 1024; ulimit "
      "-n 1024` in a root shell, LimitNOFILE=1024 in its systemd unit";
  b.error_code = core::BackendErrorCode::OutOfResources;
  b.shortage = core::Shortage::OwnDescriptors;
  return b;
}

const std::vector<RemedyStep> kRaiseOwnLimit = {
    {StepKind::Run, "ulimit -n 1024; gpureap doctor", "a higher limit of open files"},
    {StepKind::Or, "LimitNOFILE=1024", "in the systemd unit that runs gpureap"}};

}  // namespace short_of_descriptors
using short_of_descriptors::kRaiseOwnLimit;
using short_of_descriptors::nvml_short_of_descriptors;

// gpureap out of descriptors says nothing of the driver: the one finding is about gpureap's limit,
// with its remedy, and no driver is called missing, whether NVIDIA's device nodes exist or not.
TEST(DoctorRules, ABackendOutOfDescriptorsIsGpureapsLimitNotAMissingDriver) {
  for (bool nodes : {false, true}) {
    SCOPED_TRACE(nodes ? "NVIDIA device nodes" : "no device node read");
    core::ProcView v;
    if (nodes) v.driver_device_files = {"nvml"};
    const auto b = nvml_short_of_descriptors();
    auto fs = run(core::join(v, core::combine({b}), "h", {}));
    ASSERT_EQ(fs.size(), 1u) << to_string(fs.back().code);
    const Finding& f = fs[0];
    EXPECT_EQ(f.code, FindingCode::IncompleteView);
    EXPECT_EQ(f.severity, Severity::Warning);
    EXPECT_EQ(f.evidence, std::vector<std::string>{"NVML: " + *b.error});
    EXPECT_EQ(f.remedy, kRaiseOwnLimit);
    EXPECT_EQ(f.summary, "gpureap ran out of file descriptors: NVML could not be loaded");
    EXPECT_NE(f.explanation.find("says nothing of the GPU driver"), std::string::npos)
        << f.explanation;
    EXPECT_TRUE(f.facets.empty());
    EXPECT_TRUE(f.gpus.empty());
    EXPECT_TRUE(f.pids.empty());
  }
}

// The holder scan short of the same descriptors is the same problem: one finding, both facts,
// the remedy once.
TEST(DoctorRules, AScanAndABackendShortOfDescriptorsAreOneFinding) {
  core::ProcView v;
  v.scan_failures = {"/proc/4242/fd could not be read: Too many open files; raise the limit"};
  const auto b = nvml_short_of_descriptors();
  auto fs = run(core::join(v, core::combine({b}), "h", {}));
  ASSERT_EQ(fs.size(), 1u) << to_string(fs.back().code);
  EXPECT_EQ(fs[0].code, FindingCode::IncompleteView);
  EXPECT_EQ(fs[0].evidence, (std::vector<std::string>{"NVML: " + *b.error, v.scan_failures[0]}));
  EXPECT_EQ(fs[0].remedy, kRaiseOwnLimit);
  EXPECT_EQ(fs[0].summary,
            "gpureap ran out of file descriptors: NVML could not be loaded, and holders may be "
            "missing");

  // The scan alone: its own words, the same remedy.
  auto scan_only = make_snapshot({proc(1, 0, 1)}, {gpu(0, 0, 0, {})});
  scan_only.proc.scan_failures = v.scan_failures;
  auto fs2 = run(scan_only);
  ASSERT_EQ(fs2.size(), 1u) << to_string(fs2.back().code);
  EXPECT_EQ(fs2[0].code, FindingCode::IncompleteView);
  EXPECT_EQ(fs2[0].evidence, v.scan_failures);
  EXPECT_EQ(fs2[0].remedy, kRaiseOwnLimit);
  EXPECT_EQ(fs2[0].summary, "the holder scan failed: holders may be missing");
}

// Each kind of shortage gets its own remedy, once however many reads met it, in one finding:
// the system's full table of open files is never told to raise gpureap's own limit, and a
// shortage of memory is told nothing of files.
TEST(DoctorRules, TheRemedyFollowsWhatRanShort) {
  using core::Shortage;
  const std::vector<RemedyStep> kSystemFiles = {
      {StepKind::Run, "cat /proc/sys/fs/file-nr",
       "the machine's open files, and its limit (the third figure)"},
      {StepKind::Then, "sudo sysctl -w fs.file-max=$((2 * $(cut -f3 /proc/sys/fs/file-nr)))",
       "doubles the limit; or end what holds the most files"}};
  const std::vector<RemedyStep> kMemory = {
      {StepKind::Run, "free -h", "what memory the machine has left"},
      {StepKind::Or, "ulimit -v unlimited; gpureap doctor",
       "where gpureap's own limit of memory is the one reached"}};
  struct Case {
    std::optional<Shortage> library;
    std::vector<Shortage> scan;
    std::vector<RemedyStep> remedy;
    std::string summary;
  };
  auto then = [](std::vector<RemedyStep> a, std::vector<RemedyStep> b) {
    b.front().kind = StepKind::Then;
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  const std::vector<Case> cases = {
      {Shortage::SystemFiles,
       {},
       kSystemFiles,
       "gpureap ran out of open files (the system's table was full): NVML could not be loaded"},
      {std::nullopt, {Shortage::Memory}, kMemory, "the holder scan failed: holders may be missing"},
      {Shortage::OwnDescriptors,
       {Shortage::OwnDescriptors},
       kRaiseOwnLimit,
       "gpureap ran out of file descriptors: NVML could not be loaded, and holders may be "
       "missing"},
      {Shortage::SystemFiles,
       {Shortage::Memory, Shortage::SystemFiles},
       then(kSystemFiles, kMemory),
       "gpureap ran out of open files (the system's table was full) and memory: NVML could not "
       "be loaded, and holders may be missing"},
      {Shortage::Memory,
       {Shortage::OwnDescriptors},
       then(kRaiseOwnLimit, kMemory),
       "gpureap ran out of file descriptors and memory: NVML could not be loaded, and holders "
       "may be missing"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.summary);
    core::ProcView v;
    std::vector<core::BackendReport> backends;
    if (c.library) {
      auto b = nvml_short_of_descriptors();
      b.shortage = c.library;
      backends.push_back(b);
    }
    if (!c.scan.empty()) {
      v.scan_failures = {"2 processes could not be scanned (reading /proc/PID/fd: ...)"};
      v.scan_shortages = c.scan;
    }
    auto fs = run(core::join(v, core::combine(backends), "h", {}));
    ASSERT_EQ(fs.size(), 1u) << to_string(fs.back().code);
    EXPECT_EQ(fs[0].code, FindingCode::IncompleteView);
    EXPECT_EQ(fs[0].remedy, c.remedy);
    EXPECT_EQ(fs[0].summary, c.summary);
    if (c.library) {
      const std::string lacked = c.library == Shortage::SystemFiles ? "the system's table"
                                 : c.library == Shortage::Memory    ? "for want of memory"
                                                                    : "its limit of open files";
      EXPECT_NE(fs[0].explanation.find(lacked), std::string::npos) << fs[0].explanation;
    }
  }
}

// NVML down with `code`, its error "it failed".
core::BackendReport nvml_down_with(core::BackendErrorCode code) {
  core::BackendReport b;
  b.name = "nvml";
  b.vendor = "nvidia";
  b.error = "it failed";
  b.error_code = code;
  return b;
}

// Every error code a backend can report is given its finding on purpose; a code added without
// one fails here rather than reading as a missing driver.
TEST(DoctorRules, EveryBackendErrorCodeHasItsFinding) {
  using core::BackendErrorCode;
  const std::map<BackendErrorCode, std::vector<std::string>> expected = {
      {BackendErrorCode::LibraryNotFound, {"driver-missing"}},
      {BackendErrorCode::DriverNotLoaded, {"driver-missing"}},
      {BackendErrorCode::VersionMismatch, {"driver-mismatch"}},
      {BackendErrorCode::NoPermission, {"incomplete-view"}},
      {BackendErrorCode::SymbolMissing, {"driver-missing"}},
      {BackendErrorCode::InitFailed, {"driver-missing"}},
      {BackendErrorCode::Internal, {"driver-missing"}},
      {BackendErrorCode::NotAnswering, {"driver-not-answering"}},
      {BackendErrorCode::NotConfigured, {"driver-missing"}},
      {BackendErrorCode::NoDevice, {}},
      {BackendErrorCode::OutOfResources, {"incomplete-view"}},
  };
  ASSERT_EQ(expected.size(), text::enumerators<BackendErrorCode>().size());
  for (BackendErrorCode code : text::enumerators<BackendErrorCode>()) {
    SCOPED_TRACE(core::to_string(code));
    const core::BackendReport b = nvml_down_with(code);
    std::vector<std::string> codes;
    for (const auto& f : run(core::join({}, core::combine({b}), "h", {})))
      codes.push_back(std::string(to_string(f.code)));
    ASSERT_TRUE(expected.count(code));
    EXPECT_EQ(codes, expected.at(code));
  }
}

// Another library is worth pointing at only where the one the loader found is in question: the
// devices not open to gpureap's user, or a driver that refused to start, are not fixed by it, and
// no permission says nothing of the driver.
TEST(DoctorRules, TheLibraryOptionIsAdvisedOnlyWhereTheLibraryIsInQuestion) {
  using core::BackendErrorCode;
  const std::map<BackendErrorCode, bool> advised = {
      {BackendErrorCode::LibraryNotFound, true}, {BackendErrorCode::SymbolMissing, true},
      {BackendErrorCode::NotConfigured, true},   {BackendErrorCode::DriverNotLoaded, false},
      {BackendErrorCode::InitFailed, false},     {BackendErrorCode::Internal, false},
      {BackendErrorCode::NoPermission, false},
  };
  for (const auto& [code, library_advised] : advised) {
    SCOPED_TRACE(core::to_string(code));
    const core::BackendReport b = nvml_down_with(code);
    auto s = core::join({}, core::combine({b}), "h", {});
    s.proc.driver_device_files = {"nvml"};  // the devices exist: the library is what fails
    const auto fs = run(s);
    ASSERT_EQ(fs.size(), 1u);
    std::string remedy;
    for (const auto& step : fs[0].remedy) remedy += step.line() + "\n";
    EXPECT_EQ(remedy.find("--nvml-library") != std::string::npos, library_advised) << remedy;
    if (code == BackendErrorCode::NoPermission) {
      EXPECT_EQ(fs[0].evidence, (std::vector<std::string>{"NVML: it failed"}));
      EXPECT_NE(fs[0].summary.find("may not open the NVIDIA devices"), std::string::npos)
          << fs[0].summary;
      EXPECT_EQ(remedy.find("nvidia-smi"), std::string::npos) << remedy;
      EXPECT_NE(remedy.find("sudo gpureap doctor"), std::string::npos) << remedy;
    }
  }
}

TEST(DoctorRules, LayoutAndIncompleteView) {
  auto g = gpu(0, 0, 0, {});
  g.processes_error = "process records failed validation";
  SnapshotOptions o;
  o.uninspectable = 4;
  auto fs = run(make_snapshot({proc(1, 0, 1)}, {g}, o));
  ASSERT_NE(find(fs, "nvml-layout"), nullptr);
  const auto* inc = find(fs, "incomplete-view");
  ASSERT_NE(inc, nullptr);
  EXPECT_NE(inc->evidence[0].find("4 processes"), std::string::npos);
}

TEST(DoctorRules, ContainerHoldersGetTheRuntimesStopCommand) {
  auto w = holder(4250, 1, 4242);
  w.details->container = core::ContainerInfo{"docker", std::string(64, 'a'), std::nullopt};
  w.details->container->verified = true;
  auto s = make_snapshot({proc(1, 0, 1), w}, {gpu(0, 0, 8 * GiB, {listed(4242, 8 * GiB)})});
  auto fs = run(s);
  const auto* f = find(fs, "no-such-process", 4242);
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(remedy_has(*f, "docker stop aaaaaaaaaaaa   # stops its container"));
}

TEST(DoctorRules, AnUnverifiedContainerClaimGetsNoStopCommand) {
  // Its cgroup's name claims someone else's container: stopping that would hit the victim.
  auto w = holder(4250, 1, 4242);
  w.details->container = core::ContainerInfo{"docker", std::string(64, 'a'), std::nullopt};
  w.details->container->name = "victim";
  auto s = make_snapshot({proc(1, 0, 1), w}, {gpu(0, 0, 8 * GiB, {listed(4242, 8 * GiB)})});
  auto fs = run(s);
  const auto* f = find(fs, "no-such-process", 4242);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->remedy,
            (std::vector<RemedyStep>{{StepKind::Run, "gpureap kill 4242",
                                      "ends its keeper (PID 4250) and waits for the memory to "
                                      "come back"}}));
}

TEST(DoctorRules, AStopCommandSaysWhichContainerAndPodItStops) {
  auto w = holder(4250, 1, 4242);
  w.details->container = core::ContainerInfo{
      "kubernetes", std::string(64, 'b'), "uid-1", "train", "bert-0", "research"};
  w.details->container->verified = true;
  auto s = make_snapshot({proc(1, 0, 1), w}, {gpu(0, 0, 8 * GiB, {listed(4242, 8 * GiB)})});
  auto fs = run(s);
  const auto* f = find(fs, "no-such-process", 4242);
  ASSERT_NE(f, nullptr);
  // The id goes into the command; the names only into its comment.
  EXPECT_TRUE(
      remedy_has(*f, "crictl stop bbbbbbbbbbbb   # stops container train of pod research/bert-0"));
}

// A line with a raw control character: a newline would split it in two wherever it is shown.
bool raw_control(const std::string& line) {
  return std::any_of(line.begin(), line.end(), [](char c) {
    auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7F;
  });
}

// Names are anyone's to set (a process's, a container's, a file's in /dev/shm): every remedy,
// fact and explanation stays one line, and a path in a command still names the file.
TEST(DoctorRules, EveryLineOfAFindingIsOneLineWhateverTheNames) {
  auto w = holder(4250, 1, 4242);
  w.stat.comm = "evil\nrm -rf /";
  w.details->container = core::ContainerInfo{"kubernetes", std::string(64, 'b'), "uid-1",
                                             "c\n1",       "pod\r\n2",           "ns\x1b[31m"};
  w.details->container->verified = true;  // the runtime vouched for it: it gets a stop command
  auto stopped = holder(4300, 1, 4300, 0, 'T');
  stopped.stat.comm = "a\nb";
  procfs::IpcResidue ipc;
  ipc.files.push_back({"/dev/shm/x\ny'z", 32 * MiB, 1001, false});  // its owner runs nothing
  auto s = make_snapshot({proc(1, 0, 1), w, stopped},
                         {gpu(0, 0, 8 * GiB, {listed(4242, 8 * GiB), listed(4300, 0)})});
  auto fs = run(s, s, ipc);
  ASSERT_NE(find(fs, "no-such-process", 4242), nullptr);
  ASSERT_NE(find(fs, "stopped-holder", 4300), nullptr);
  for (const auto& f : fs) {
    for (const auto& r : f.remedy)
      EXPECT_FALSE(raw_control(r.line())) << to_string(f.code) << ": " << r.line();
    for (const auto& x : f.facets) EXPECT_FALSE(raw_control(x.text)) << to_string(f.code);
    EXPECT_FALSE(raw_control(f.summary)) << to_string(f.code);
    for (const auto& e : f.evidence) EXPECT_FALSE(raw_control(e)) << to_string(f.code) << ": " << e;
    EXPECT_FALSE(raw_control(f.explanation)) << to_string(f.code);
  }
  EXPECT_TRUE(remedy_has(*find(fs, "no-such-process", 4242),
                         "crictl stop bbbbbbbbbbbb   # stops container c\\n1 of pod "
                         "ns\\x1b[31m/pod\\r\\n2"));
  // The file's name as a shell word the shell turns back into it, on one line.
  EXPECT_TRUE(remedy_has(*find(fs, "ipc-residue"), "rm $'/dev/shm/x\\ny\\'z'"));
}

TEST(DoctorRules, ProtectedHolderIsInfo) {
  auto p = holder(77, 1, 77);
  p.stat.comm = "nvidia-persiste";
  auto fs = run(make_snapshot({proc(1, 0, 1), p}, {gpu(0, 0, 0, {})}));
  const auto* f = find(fs, "protected-holder", 77);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::Info);
  // Stopped, it gets the stopped-holder remedy, which must say that naming it overrides the
  // protection.
  p.stat.state = 'T';
  auto stopped = run(make_snapshot({proc(1, 0, 1), p}, {gpu(0, 0, 0, {})}));
  const auto* s = find(stopped, "stopped-holder", 77);
  ASSERT_NE(s, nullptr);
  bool named = false;
  for (const auto& r : s->remedy) {
    if (r.command == "gpureap kill 77") {
      named = true;
      EXPECT_NE(r.why.find("overrides the protection"), std::string::npos) << r.line();
    }
  }
  EXPECT_TRUE(named);
  // One process, one finding: its being protected is a facet of its being stopped.
  EXPECT_EQ(find(stopped, "protected-holder", 77), nullptr);
  EXPECT_NE(facet(*s, FindingCode::ProtectedHolder, 77), nullptr);
}

TEST(DoctorRules, GpuFilterKeepsOnlyThatGpusFindings) {
  auto s = make_snapshot(
      {proc(1, 0, 1), holder(4250, 1, 4242, 1)},
      {gpu(0, 0, 8 * GiB, {listed(999, 8 * GiB)}), gpu(1, 1, 2 * GiB, {listed(4242, 2 * GiB)})});
  auto only1 = run(s, s, {}, 1u);
  EXPECT_NE(find(only1, "no-such-process", 4242), nullptr);
  EXPECT_EQ(find(only1, "leaked-memory", 999), nullptr);
  auto only0 = run(s, s, {}, 0u);
  EXPECT_NE(find(only0, "leaked-memory", 999), nullptr);
  EXPECT_EQ(find(only0, "no-such-process", 4242), nullptr);
}

}  // namespace
}  // namespace gpureap::doctor

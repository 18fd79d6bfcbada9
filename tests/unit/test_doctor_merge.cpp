// One problem, one finding: the rules' views of one ghost, one process or one GPU's releases
// are merged into one finding whose facets keep every code, for --only, alerts and metrics.
#include <gtest/gtest.h>

#include <sstream>

#include "doctor/diagnose.h"
#include "doctor/fixable.h"
#include "doctor/merge.h"
#include "output/doctor_json.h"
#include "output/doctor_view.h"
#include "snapshot_builders.h"
#include "text/wrap.h"
#include "text_lines.h"

namespace gpureap::doctor {
namespace {

using namespace gpureap::testing;

core::Snapshot at(std::vector<core::HostProcess> ps, std::vector<core::Gpu> gpus, int seconds) {
  SnapshotOptions o;
  o.at += std::chrono::seconds(seconds);
  return make_snapshot(std::move(ps), std::move(gpus), o);
}

// The scene of a busy morning: a ghost (gone 4242, kept by its orphaned worker 4250), a leak
// (gone 999 on GPU 1, held by nothing), a paused job (300) and a parent that does not reap its
// zombie (302), with a protected service (77) that is no problem.
struct Scene {
  core::Snapshot first, last;
  Scene() {
    auto protect = holder(77, 1, 77);
    protect.stat.comm = "nvidia-persiste";
    auto ps = [&] {
      return std::vector<core::HostProcess>{proc(1, 0, 1),
                                            holder(4250, 1, 4242),
                                            proc(10, 1, 10),
                                            holder(300, 10, 300, 0, 'T'),
                                            holder(302, 10, 302),
                                            proc(303, 302, 302, 'Z'),
                                            protect};
    };
    auto gpus = [] {
      return std::vector<core::Gpu>{
          gpu(0, 0, 12 * GiB, {listed(4242, 8 * GiB), listed(300, 4 * GiB)}),
          gpu(1, 1, 6 * GiB, {listed(999, 6 * GiB)})};
    };
    first = at(ps(), gpus(), 0);
    last = at(ps(), gpus(), 5);
  }
  std::vector<Finding> diagnose() const {
    return doctor::diagnose({first, last, {}, std::nullopt, [](const core::HostProcess& p) {
                               return p.stat.comm == "nvidia-persiste";
                             }});
  }
};

std::vector<const Finding*> problems(const std::vector<Finding>& fs) {
  std::vector<const Finding*> out;
  for (const auto& f : fs)
    if (f.severity != Severity::Info) out.push_back(&f);
  return out;
}

size_t naming(const std::vector<const Finding*>& fs, pid_t pid) {
  return static_cast<size_t>(std::count_if(fs.begin(), fs.end(), [&](const Finding* f) {
    return std::find(f->pids.begin(), f->pids.end(), pid) != f->pids.end();
  }));
}

TEST(DoctorMerge, FourProblemsAreFourFindingsEachPidNamedOnce) {
  auto fs = Scene().diagnose();
  auto ps = problems(fs);
  ASSERT_EQ(ps.size(), 4u);
  EXPECT_EQ(ps[0]->code, FindingCode::NoSuchProcess);
  EXPECT_EQ(ps[0]->pids, (std::vector<pid_t>{4242, 4250}));
  EXPECT_EQ(ps[1]->code, FindingCode::LeakedMemory);
  EXPECT_EQ(ps[2]->code, FindingCode::StoppedHolder);
  EXPECT_EQ(ps[3]->code, FindingCode::UnreapedZombies);
  for (pid_t pid : {4242, 4250, 999, 300, 302}) EXPECT_EQ(naming(ps, pid), 1u) << pid;
  EXPECT_EQ(ps[0]->summary, "GPU 0: 8.0 GiB held by gone PID 4242 through 1 worker");
  EXPECT_EQ(ps[0]->remedy.front().command, "gpureap kill 4242");
  // The protected service is information, not a problem.
  EXPECT_EQ(fs.size(), 5u);
  EXPECT_EQ(fs.back().code, FindingCode::ProtectedHolder);
}

TEST(DoctorMerge, OnlySelectsAFindingByAFacetsCode) {
  auto fs = Scene().diagnose();
  keep_codes(fs, {FindingCode::OrphanHolder});
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].code, FindingCode::NoSuchProcess);
  auto all = Scene().diagnose();
  keep_codes(all, {FindingCode::InheritedHolder, FindingCode::UnreapedZombies});
  EXPECT_EQ(all.size(), 2u);
  auto none = Scene().diagnose();
  keep_codes(none, {FindingCode::GpuKernelError});
  EXPECT_TRUE(none.empty());
}

TEST(DoctorMerge, FixEndsTheGhostAndItsOrphanedKeeperNeverThePausedJob) {
  auto chosen = fixable(Scene().diagnose());
  EXPECT_EQ(chosen, (std::vector<Fixable>{{4242, core::Anomaly::NoSuchProcess},
                                          {4250, core::Anomaly::InheritedHolder}}));
}

Finding one(FindingCode code, Severity sev, std::vector<pid_t> pids, std::string summary) {
  Finding f;
  f.code = code;
  f.severity = sev;
  f.pids = std::move(pids);
  f.gpus = {0};
  f.memory_bytes = 2 * GiB;
  f.summary = std::move(summary);
  f.remedy = {"gpureap kill " + std::to_string(f.pids.front()) + "   # ends it"};
  return f;
}

TEST(DoctorMerge, TwoGonePidsThatShareAKeeperAreOneProblem) {
  std::vector<Finding> fs = {
      one(FindingCode::NoSuchProcess, Severity::Critical, {10, 50}, "a"),
      one(FindingCode::NoSuchProcess, Severity::Critical, {11, 50, 51}, "b"),
      one(FindingCode::InheritedHolder, Severity::Warning, {50}, "50 inherited"),
      one(FindingCode::OrphanHolder, Severity::Warning, {51}, "51 is an orphan"),
  };
  merge_findings(fs);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].pids, (std::vector<pid_t>{10, 11, 50, 51}));
  EXPECT_EQ(fs[0].memory_bytes, 4 * GiB);
  // Its one line says the memory its figure does, and both gone PIDs.
  EXPECT_EQ(fs[0].summary, "GPU 0: 4.0 GiB held by gone PIDs 10, 11 through 2 workers");
  EXPECT_EQ(fs[0].remedy.front().command, "gpureap kill 10 11");
  EXPECT_EQ(fs[0].codes(),
            (std::vector<FindingCode>{FindingCode::NoSuchProcess, FindingCode::InheritedHolder,
                                      FindingCode::OrphanHolder}));
  ASSERT_EQ(fs[0].facets.size(), 3u);
  EXPECT_EQ(fs[0].facets[0], (Facet{FindingCode::NoSuchProcess, 11, Severity::Critical, "b"}));
  EXPECT_EQ(fs[0].facets[2],
            (Facet{FindingCode::OrphanHolder, 51, Severity::Warning, "51 is an orphan"}));
}

// Two gone trainers in one process group (1000 leads it), 8 and 4 GiB on GPU 0.
std::vector<Finding> two_gone_jobs(std::vector<core::HostProcess> workers,
                                   std::map<pid_t, pid_t> exited_parents = {}) {
  SnapshotOptions o;
  o.exited_parents = std::move(exited_parents);
  workers.push_back(proc(1, 0, 1));
  auto s = make_snapshot(std::move(workers),
                         {gpu(0, 0, 12 * GiB, {listed(1000, 8 * GiB), listed(1100, 4 * GiB)})}, o);
  return diagnose({s, s, {}, std::nullopt, {}});
}

TEST(DoctorMerge, TwoGoneJobsInOneGroupAreTwoFindingsEachWithItsOwnMemory) {
  // The daemon saw each trainer fork its worker: each worker keeps its own trainer.
  auto fs =
      two_gone_jobs({holder(1001, 1, 1000), holder(1101, 1, 1000)}, {{1001, 1000}, {1101, 1100}});
  auto ps = problems(fs);
  ASSERT_EQ(ps.size(), 2u);
  EXPECT_EQ(ps[0]->pids, (std::vector<pid_t>{1000, 1001}));
  EXPECT_EQ(ps[0]->memory_bytes, 8 * GiB);
  EXPECT_EQ(ps[0]->summary, "GPU 0: 8.0 GiB held by gone PID 1000 through 1 worker");
  EXPECT_EQ(ps[1]->pids, (std::vector<pid_t>{1100, 1101}));
  EXPECT_EQ(ps[1]->memory_bytes, 4 * GiB);
  // Each worker's own view counts its trainer's memory only.
  for (const auto& f : fs)
    for (const auto& facet : f.facets) EXPECT_EQ(facet.text.find("12"), std::string::npos);
}

TEST(DoctorMerge, AWorkerKeepingTwoGoneJobsIsOneFindingWhoseLineSaysTheirSum) {
  // Nothing says which trainer forked 1001: it is in 1000's group and 1100's session.
  auto worker = proc(1001, 1, 1000, 'S', 1100);
  worker.devices = holder(1001, 1, 1000).devices;
  auto fs = two_gone_jobs({worker});
  auto ps = problems(fs);
  ASSERT_EQ(ps.size(), 1u);
  EXPECT_EQ(ps[0]->pids, (std::vector<pid_t>{1000, 1100, 1001}));
  EXPECT_EQ(ps[0]->memory_bytes, 12 * GiB);
  EXPECT_EQ(ps[0]->summary, "GPU 0: 12 GiB held by gone PIDs 1000, 1100 through 1 worker");
  auto text = output::render_doctor_summaries(fs, output::Style(false), {});
  EXPECT_NE(text.find("12 GiB"), std::string::npos) << text;
  EXPECT_EQ(text.find("8.0 GiB"), std::string::npos) << text;
}

TEST(DoctorMerge, ThreeGonePidsThatShareKeepersStayGonePidsBeforeKeepers) {
  std::vector<Finding> fs = {
      one(FindingCode::NoSuchProcess, Severity::Critical, {10, 50}, "a"),
      one(FindingCode::NoSuchProcess, Severity::Critical, {11, 50, 51}, "b"),
      one(FindingCode::NoSuchProcess, Severity::Critical, {12, 51}, "c"),
  };
  merge_findings(fs);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].pids, (std::vector<pid_t>{10, 11, 12, 50, 51}));
  EXPECT_EQ(fs[0].memory_bytes, 6 * GiB);
  EXPECT_EQ(fs[0].summary, "GPU 0: 6.0 GiB held by gone PIDs 10, 11, 12 through 2 workers");
  EXPECT_EQ(fs[0].remedy.front().command, "gpureap kill 10 11 12");
}

TEST(DoctorMerge, OneProcessIsOneFindingTheMostSevereNamesIt) {
  std::vector<Finding> fs = {
      one(FindingCode::ProtectedHolder, Severity::Info, {77}, "protected"),
      one(FindingCode::StoppedHolder, Severity::Warning, {77}, "paused"),
      one(FindingCode::UnreapedZombies, Severity::Warning, {78}, "zombies"),
  };
  fs[1].remedy = {"kill -CONT 77   # resumes it", {StepKind::Or, "gpureap kill 77", "ends it"}};
  merge_findings(fs);
  ASSERT_EQ(fs.size(), 2u);
  EXPECT_EQ(fs[0].code, FindingCode::StoppedHolder);
  EXPECT_TRUE(fs[0].has(FindingCode::ProtectedHolder));
  EXPECT_EQ(fs[0].remedy.size(), 2u) << "the same command is not a step twice";
  EXPECT_EQ(fs[1].code, FindingCode::UnreapedZombies);
}

TEST(DoctorMerge, ReleasesOnOneGpuAreOne) {
  std::vector<Finding> fs = {
      one(FindingCode::Releasing, Severity::Info, {10}, "10 releasing"),
      one(FindingCode::Releasing, Severity::Info, {11}, "11 released"),
  };
  fs.push_back({FindingCode::Releasing, Severity::Info, {0}, {}, 3 * GiB});
  merge_findings(fs);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].memory_bytes, 4 * GiB);
  EXPECT_EQ(fs[0].facets.size(), 2u);
}

TEST(DoctorMerge, StepsSayHowTheyFollowEachOther) {
  RemedyStep s("gpureap kill 42   # ends it");
  EXPECT_EQ(s.command, "gpureap kill 42");
  EXPECT_EQ(s.why, "ends it");
  EXPECT_EQ(s.kind, StepKind::Run);
  EXPECT_EQ(s.line(), "gpureap kill 42   # ends it");
  EXPECT_EQ(RemedyStep("reboot").why, "");
  std::vector<Finding> fs = {one(FindingCode::OrphanHolder, Severity::Warning, {9}, "x")};
  fs[0].remedy = {"a   # first", "b   # instead", {StepKind::Then, "c", "after"}};
  merge_findings(fs);
  EXPECT_EQ(fs[0].remedy[0].kind, StepKind::Run);
  EXPECT_EQ(fs[0].remedy[1].kind, StepKind::Or);  // an unqualified later step is an alternative
  EXPECT_EQ(fs[0].remedy[2].kind, StepKind::Then);
}

TEST(DoctorView, SummariesFirstInfoHiddenEveryLineFitsEightyColumns) {
  Scene scene;
  auto fs = scene.diagnose();
  output::Style plain(false);
  auto text = output::render_doctor(scene.last, fs, plain, {.width = 80});
  auto lines = lines_of(text);
  ASSERT_GE(lines.size(), 6u) << text;
  EXPECT_EQ(lines[0], "4 problems need attention (2 critical):");
  EXPECT_EQ(lines[1].rfind(" 1. GPU 0: 8.0 GiB held by gone PID 4242 through 1 worker", 0), 0u)
      << text;
  EXPECT_NE(text.find("`gpureap kill 4242`"), std::string::npos);
  for (const auto& l : lines) EXPECT_LE(text::visible_width(l), 80u) << l;
  EXPECT_NE(text.find("1 informational finding hidden; -v shows it."), std::string::npos) << text;
  EXPECT_EQ(text.find("protected system service"), std::string::npos);
  EXPECT_NE(text.find("run:  gpureap kill 4242"), std::string::npos) << text;
  EXPECT_NE(text.find("[orphan-holder]"), std::string::npos) << text;
  EXPECT_NE(text.find("`gpureap doctor --fix` applies"), std::string::npos);
  // -v shows the info finding; --fix's own report does not point at --fix.
  auto verbose = output::render_doctor(scene.last, fs, plain, {.verbose = true, .width = 80});
  EXPECT_NE(verbose.find("protected system service"), std::string::npos);
  EXPECT_EQ(verbose.find("hidden"), std::string::npos);
  auto fixing = output::render_doctor(scene.last, fs, plain, {.width = 80, .fixing = true});
  EXPECT_EQ(fixing.find("`gpureap doctor --fix` applies"), std::string::npos) << fixing;
  EXPECT_NE(fixing.find("4 problems need attention"), std::string::npos) << fixing;
  // Into a pipe: not wrapped, one line per fact.
  auto piped = output::render_doctor(scene.last, fs, plain, output::DoctorTextOptions{});
  EXPECT_LT(lines_of(piped).size(), lines.size());
}

TEST(DoctorView, JsonCarriesCodesFacetsSummaryAndSteps) {
  Scene scene;
  auto doc = output::doctor_to_json(scene.last, scene.diagnose());
  const auto& ghost = doc["findings"][0];
  EXPECT_EQ(ghost["code"], "no-such-process");
  EXPECT_EQ(ghost["codes"],
            nlohmann::json::array({"no-such-process", "inherited-holder", "orphan-holder"}));
  EXPECT_EQ(ghost["summary"], "GPU 0: 8.0 GiB held by gone PID 4242 through 1 worker");
  ASSERT_EQ(ghost["facets"].size(), 2u);
  EXPECT_EQ(ghost["facets"][0]["code"], "inherited-holder");
  EXPECT_EQ(ghost["facets"][0]["pid"], 4250);
  EXPECT_EQ(ghost["facets"][0]["severity"], "warning");
  EXPECT_TRUE(ghost["facets"][0]["text"].is_string());
  ASSERT_EQ(ghost["steps"].size(), 1u);
  EXPECT_EQ(ghost["steps"][0]["kind"], "run");
  EXPECT_EQ(ghost["steps"][0]["command"], "gpureap kill 4242");
  EXPECT_EQ(ghost["remedy"][0],
            "gpureap kill 4242   # ends its keeper (PID 4250) and waits for the memory to come "
            "back");
  const auto& paused = doc["findings"][2];
  EXPECT_EQ(paused["steps"][0]["kind"], "run");
  EXPECT_EQ(paused["steps"][1]["kind"], "or");
}

// A machine with AMD GPUs only: NVML cannot load and no NVIDIA device node exists. Nothing
// about NVIDIA is wrong there: no "No NVIDIA driver is usable", no nvidia-smi, and the one
// informational line about NVML shows only with -v.
TEST(DoctorView, AnAmdOnlyMachineHearsNothingAboutNvidia) {
  core::ProcView v;
  v.driver_device_files = {};
  core::BackendReport nvml;
  nvml.name = "nvml";
  nvml.vendor = "nvidia";
  nvml.error = "libnvidia-ml.so.1: cannot open shared object file";
  nvml.error_code = core::BackendErrorCode::LibraryNotFound;
  core::BackendReport amd;
  amd.name = "amdgpu";
  amd.vendor = "amd";
  amd.available = true;
  auto g = gpu(0, 0, 0, {});
  g.vendor = "amd";
  g.backend = "amdgpu";
  g.name = "AMD Radeon RX 6800";
  amd.gpus.push_back(g);
  auto s = core::join(v, core::combine({nvml, amd}), "h", {});
  auto fs = diagnose({s, s, {}, std::nullopt, nullptr});
  EXPECT_EQ(worst(fs), Severity::Info);
  for (const auto& f : fs) {
    EXPECT_EQ(f.explanation.find("No NVIDIA driver is usable"), std::string::npos);
    for (const auto& step : f.remedy) EXPECT_EQ(step.command.find("nvidia-smi"), std::string::npos);
  }
  output::Style plain(false);
  auto text = output::render_doctor(s, fs, plain, {.width = 80});
  EXPECT_EQ(text.find("NVML"), std::string::npos) << text;
  EXPECT_EQ(text.find("NVIDIA"), std::string::npos) << text;
  EXPECT_EQ(text.rfind("Healthy: 1 GPU", 0), 0u) << text;
  auto verbose = output::render_doctor(s, fs, plain, {.verbose = true, .width = 80});
  EXPECT_EQ(verbose.find("nvidia-smi"), std::string::npos) << verbose;
  EXPECT_EQ(verbose.find("No NVIDIA driver"), std::string::npos) << verbose;
}

}  // namespace
}  // namespace gpureap::doctor

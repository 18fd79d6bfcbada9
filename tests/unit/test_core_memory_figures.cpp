// The memory figures add up, over generated scenes: for every GPU, attributed + ghost +
// unattributed = used (leaked is the part of ghost nothing alive holds), each gone PID's memory
// counted once, on the snapshot and on every consumer that shows a figure: the ps footer's
// ghost notices, doctor's findings and their one-line summaries, the metrics, and the report's
// chart. A scene is live jobs with workers, gone jobs kept by their orphaned workers (two of them
// sometimes in one process group), leaks, a job listed on two GPUs, a PID listed twice on one
// GPU, a listing without a figure, and memory no process is listed with; with open-file ids (as
// kcmp gives them) or without.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "doctor/diagnose.h"
#include "export/metrics.h"
#include "history/history.h"
#include "output/ghost_summary.h"
#include "report/history_page.h"
#include "snapshot_builders.h"
#include "text/byte_format.h"

namespace gpureap::testing {
namespace {

class SceneMaker {
 public:
  explicit SceneMaker(unsigned seed) : rng_(seed) {}

  core::Snapshot make() {
    ids_ = pick(0, 1) == 1;
    procs_ = {proc(1, 0, 1)};
    const unsigned gpus = pick(1, 3);
    std::vector<core::Gpu> out;
    for (unsigned g = 0; g < gpus; ++g) {
      next_pid_ = 100000 * (g + 1);
      std::vector<core::DriverProcess> listed_here;
      for (unsigned j = pick(0, 2); j > 0; --j) live_job(g, listed_here);
      for (unsigned j = pick(0, 2); j > 0; --j) gone_job(g, listed_here);
      if (pick(0, 3) == 0) two_gone_jobs_in_one_group(g, listed_here);
      if (!listed_here.empty() && pick(0, 3) == 0) {  // also in the graphics list, with less
        auto twice = listed_here.front();
        if (twice.used_bytes) twice.used_bytes = *twice.used_bytes / 2;
        twice.kind = core::GpuProcessKind::Graphics;
        listed_here.push_back(twice);
      }
      if (pick(0, 4) == 0) {  // "not available": a share of used that is nobody's known figure
        live_job(g, listed_here, false);
        unknown_[g] += GiB;
      }
      out.push_back(gpu(g, g, 0, std::move(listed_here)));
    }
    // A job of GPU 0 listed on the last GPU too, through that GPU's own file.
    if (gpus > 1 && !jobs_on_first_.empty()) {
      pid_t job = jobs_on_first_.front();
      out.back().processes.push_back(listed(job, MiB * pick(1, 512)));
      for (auto& p : procs_)
        if (p.stat.pid == job) p.devices.push_back(hold(gpus - 1, job));
    }
    for (auto& g : out) {
      std::map<pid_t, uint64_t> most;  // a PID listed twice counts once, with its larger figure
      for (const auto& p : g.processes)
        most[p.pid] = std::max(most[p.pid], p.used_bytes.value_or(0));
      uint64_t listed_sum = unknown_[g.index];
      for (const auto& [pid, bytes] : most) listed_sum += bytes;
      g.memory.used_bytes = listed_sum + MiB * pick(0, 2048);
    }
    SnapshotOptions o;
    o.exited_parents = exited_parents_;
    return make_snapshot(procs_, std::move(out), o);
  }

 private:
  unsigned pick(unsigned lo, unsigned hi) {
    return std::uniform_int_distribution<unsigned>(lo, hi)(rng_);
  }
  uint64_t bytes() { return MiB * 256 * pick(1, 64); }

  core::DeviceHold hold(unsigned gpu, pid_t owner) {
    return nvidia_hold(
        gpu, {5},
        ids_ ? std::optional<std::string>(std::to_string(owner) + ":" + std::to_string(gpu))
             : std::nullopt);
  }

  // A running job and its workers, which share its open file.
  void live_job(unsigned g, std::vector<core::DriverProcess>& listed_here, bool known = true) {
    pid_t job = next_pid_++;
    auto p = proc(job, 1, job);
    p.devices.push_back(hold(g, job));
    procs_.push_back(p);
    for (unsigned w = pick(0, 2); w > 0; --w) {
      auto worker = proc(next_pid_++, job, job);
      worker.devices.push_back(hold(g, job));
      procs_.push_back(worker);
    }
    listed_here.push_back(listed(job, known ? std::optional<uint64_t>(bytes()) : std::nullopt));
    if (g == 0 && known) jobs_on_first_.push_back(job);
  }

  // A gone job: its orphaned workers in its group keep it, or nothing does (a leak).
  void gone_job(unsigned g, std::vector<core::DriverProcess>& listed_here) {
    pid_t job = next_pid_++;
    for (unsigned w = pick(0, 2); w > 0; --w) {
      auto worker = proc(next_pid_++, 1, job);
      worker.devices.push_back(hold(g, job));
      procs_.push_back(worker);
    }
    listed_here.push_back(listed(job, bytes()));
  }

  // Two gone trainers in the first one's group, each with a worker the daemon saw it fork.
  void two_gone_jobs_in_one_group(unsigned g, std::vector<core::DriverProcess>& listed_here) {
    pid_t first = next_pid_++, second = next_pid_++;
    for (pid_t trainer : {first, second}) {
      auto worker = proc(next_pid_++, 1, first);
      worker.devices.push_back(hold(g, trainer));
      procs_.push_back(worker);
      exited_parents_[worker.stat.pid] = trainer;
      listed_here.push_back(listed(trainer, bytes()));
    }
  }

  std::mt19937 rng_;
  bool ids_ = true;
  pid_t next_pid_ = 0;
  std::vector<core::HostProcess> procs_;
  std::vector<pid_t> jobs_on_first_;
  std::map<pid_t, pid_t> exited_parents_;
  std::map<unsigned, uint64_t> unknown_;
};

// The sum of a family's samples of one GPU.
double sample_of(const std::vector<exporter::MetricFamily>& families, const std::string& name,
                 unsigned gpu) {
  double sum = 0;
  for (const auto& f : families) {
    if (f.name != name) continue;
    for (const auto& s : f.samples)
      for (const auto& l : s.labels)
        if (l.name == "gpu" && l.value == std::to_string(gpu)) sum += s.value;
  }
  return sum;
}

// What each GPU's gone PIDs hold there, each PID once.
uint64_t gone_bytes_on(const core::Snapshot& s, unsigned gpu) {
  uint64_t sum = 0;
  for (const auto& ghost : s.ghosts)
    if (const auto* row = s.row(ghost.pid))
      for (const auto& u : row->gpus)
        if (u.index == gpu) sum += u.used_bytes.value_or(0);
  return sum;
}

void check_scene(const core::Snapshot& s, unsigned seed) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  uint64_t ghost_total = 0;
  auto notices = output::ghost_notices(s);
  const std::vector<doctor::Finding> findings = doctor::diagnose({s, s, {}, std::nullopt, {}});
  const auto metrics = exporter::build_metrics({s, findings, {}});
  for (const auto& g : s.drivers.gpus) {
    SCOPED_TRACE("GPU " + std::to_string(g.index));
    const auto m = s.memory_summary(g);
    ASSERT_TRUE(g.memory.used_bytes && m.unattributed_bytes);
    // The snapshot: the split adds up to used, and no gone PID counts twice.
    EXPECT_EQ(m.attributed_bytes + m.ghost_bytes + *m.unattributed_bytes, *g.memory.used_bytes);
    EXPECT_LE(m.leaked_bytes, m.ghost_bytes);
    EXPECT_EQ(m.ghost_bytes, gone_bytes_on(s, g.index));
    ghost_total += m.ghost_bytes;
    // ps's footer: the ghost notices of a GPU add up to its ghost memory, the leaks to leaked.
    uint64_t noticed = 0, leaked = 0;
    for (const auto& n : notices) {
      if (n.gpu != g.index) continue;
      noticed += n.bytes;
      if (n.kind == output::GhostCase::Leaked) leaked += n.bytes;
      EXPECT_NE(n.headline.find(text::human_bytes(n.bytes)), std::string::npos) << n.headline;
    }
    EXPECT_EQ(noticed, m.ghost_bytes);
    EXPECT_EQ(leaked, m.leaked_bytes);
    // The metrics: the same split; every listed figure by user plus unattributed is used.
    EXPECT_EQ(sample_of(metrics, "gpureap_gpu_memory_used_bytes", g.index),
              static_cast<double>(*g.memory.used_bytes));
    EXPECT_EQ(sample_of(metrics, "gpureap_gpu_memory_ghost_bytes", g.index),
              static_cast<double>(m.ghost_bytes));
    EXPECT_EQ(sample_of(metrics, "gpureap_user_memory_bytes", g.index) +
                  sample_of(metrics, "gpureap_gpu_memory_unattributed_bytes", g.index),
              static_cast<double>(*g.memory.used_bytes));
  }
  // Each gone PID's memory is in one finding of doctor, whose one line says the same figure.
  uint64_t found = 0;
  std::map<pid_t, int> named;
  for (const auto& ghost : s.ghosts) named[ghost.pid] = 0;
  for (const auto& f : findings) {
    if (f.code != doctor::FindingCode::NoSuchProcess && f.code != doctor::FindingCode::LeakedMemory)
      continue;
    found += f.memory_bytes;
    for (pid_t p : f.pids)
      if (named.count(p)) ++named[p];
    EXPECT_NE(f.summary.find(text::human_bytes(f.memory_bytes)), std::string::npos) << f.summary;
  }
  EXPECT_EQ(found, ghost_total);
  for (const auto& [pid, n] : named) EXPECT_EQ(n, 1) << "gone PID " << pid;
  // The report's chart: the stack's top is used at every sample.
  history::History h;
  auto later = s;
  later.timestamp += std::chrono::seconds(1);
  h.record(s);
  h.record(later);
  report::HistoryInput in;
  in.hostname = "host";
  in.since = s.timestamp - std::chrono::seconds(1);
  in.history = h.query({std::nullopt, in.since});
  auto page = report::build_history_page(in, {2, later.timestamp});
  ASSERT_EQ(page.gpus.size(), s.drivers.gpus.size());
  for (const auto& c : page.gpus) {
    const auto* g = s.gpu(c.gpu);
    ASSERT_NE(g, nullptr);
    ASSERT_FALSE(c.times.empty());
    for (size_t i = 0; i < c.times.size(); ++i) {
      uint64_t top = 0;
      for (const auto& b : c.bands) top += b.bytes[i];
      EXPECT_EQ(top, *g->memory.used_bytes) << "chart of GPU " << c.gpu << ", sample " << i;
    }
  }
}

TEST(MemoryFigures, EveryViewOfEveryGeneratedSceneAddsUpToUsedCountingEachGonePidOnce) {
  for (unsigned seed = 1; seed <= 200; ++seed) {
    auto s = SceneMaker(seed).make();
    check_scene(s, seed);
    if (::testing::Test::HasFailure()) break;  // one scene's failures say enough
  }
}

}  // namespace
}  // namespace gpureap::testing

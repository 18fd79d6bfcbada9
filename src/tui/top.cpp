#include "tui/top.h"

#include <algorithm>

#include "engine/engine.h"
#include "reap/collector_world.h"
#include "tui/model.h"
#include "tui/terminal.h"

namespace gpureap::tui {
namespace {

using std::chrono::duration_cast;
using std::chrono::seconds;
using std::chrono::steady_clock;

SamplingStatus sampling_status(const engine::Engine& engine, const engine::Published& published,
                               std::chrono::milliseconds interval) {
  SamplingStatus st;
  if (auto stuck = engine.driver().down_for()) st.driver_stuck = duration_cast<seconds>(*stuck);
  // A collection that runs far past its interval is stuck, whatever blocks it.
  auto limit = std::max<steady_clock::duration>(3 * interval, seconds(5));
  if (auto busy = engine.busy_for(); busy && *busy > limit)
    st.stalled = duration_cast<seconds>(*busy);
  if (published.error) st.error = "sampling failed: " + *published.error;
  return st;
}

bool same(const SamplingStatus& a, const SamplingStatus& b) {
  return a.driver_stuck == b.driver_stuck && a.stalled == b.stalled && a.error == b.error &&
         a.from_daemon == b.from_daemon;
}

class Loop {
 public:
  Loop(std::shared_ptr<const collect::Collector> collector,
       std::shared_ptr<backend::BackendSet> backend, const TopConfig& config, Terminal& term)
      : collector_(std::move(collector)),
        world_(std::make_shared<reap::CollectorWorld>(collector_)),
        backend_(std::move(backend)),
        config_(config),
        term_(term),
        // Every collection scans /proc in full: the screen shows every holder as it is now.
        // The host-memory residue, looked for now and then, is the detail pane's evidence.
        engine_(*collector_, engine::Cadence{.interval = config.interval, .ipc_residue = true}),
        model_(TopSettings{config.readonly || config.actions_unavailable.has_value(),
                           term.unicode(), config.interval, Viewer::current()}) {}

  TopResult run() {
    auto [w, h] = term_.size();
    model_.set_size(w, h);
    if (config_.from_daemon) {
      feed_ = std::make_unique<DaemonFeed>(config_.from_daemon, collector_, config_.interval);
      if (!feed_->start()) feed_.reset();
    }
    if (!feed_) engine_.start();
    bool dirty = true;
    uint64_t rounds = 0;
    SamplingStatus status;
    while (!Terminal::interrupted()) {
      if (feed_ && feed_->failed()) {
        feed_.reset();
        engine_.start();
        rounds = ~uint64_t{0};  // the engine counts its own rounds from zero
        model_.set_message("the gpureap daemon stopped answering: top samples on its own now",
                           Role::Warn);
      }
      engine::Published published = feed_ ? feed_->published() : engine_.published();
      if (published.rounds != rounds) {
        rounds = published.rounds;
        if (!published.error && published.latest) {
          model_.set_snapshot(published.latest->snapshot);
          model_.set_host(published.latest->host);
          ipc_ = published.latest->ipc_residue;
        }
        dirty = true;
      }
      auto st = sampling_status(engine_, published, config_.interval);
      st.from_daemon = feed_ != nullptr;
      if (!same(st, status)) {
        status = st;
        model_.set_sampling(st);
        dirty = true;
      }
      dirty |= read_evidence();
      dirty |= poll_job();
      dirty |= model_.expire_message(std::chrono::steady_clock::now());
      if (dirty) term_.draw(model_.compose());
      dirty = false;
      Key key = term_.read_key(100);
      if (key.kind == Key::None) continue;
      dirty = true;
      if (key.kind == Key::Resize) {
        auto [nw, nh] = term_.size();
        model_.set_size(nw, nh);
        continue;
      }
      auto binding = binding_for(key);
      bool kill_key = binding && binding->action == Action::Kill;
      if (kill_key && config_.actions_unavailable && !config_.readonly &&
          model_.mode() == Mode::Table) {
        model_.set_message(*config_.actions_unavailable, Role::Warn);
        continue;
      }
      Effect effect = model_.handle(key);
      if (effect.kind == Effect::Quit) break;
      if (effect.kind == Effect::PlanKill) plan(effect.pids);
      if (effect.kind == Effect::ExecuteKill) execute();
    }
    term_.close();
    feed_.reset();
    TopResult result;
    bool joined = engine_.stop(std::chrono::milliseconds(500));
    bool job_running = job_ && !job_->finished();
    result.threads_left_behind = !joined || job_running || backend_->threads_stuck();
    return result;
  }

 private:
  // While the detail pane is open, what doctor reads beside the snapshots (the kernel log, the
  // blocked tasks), once per sample: the pane then shows what `gpureap doctor` finds.
  bool read_evidence() {
    if (!model_.wants_evidence()) return false;
    auto bare = model_.evidence();
    model_.set_evidence(std::make_shared<const doctor::Evidence>(
        doctor::read_evidence(*collector_, bare.first, bare.last, ipc_)));
    return true;
  }

  void plan(const std::vector<pid_t>& pids) {
    auto snapshot = model_.snapshot();
    if (!snapshot) return;
    auto p = plan_kill(*snapshot, pids, *world_);
    if (!p) {
      model_.show_plan_error(p.error().text());
      return;
    }
    size_t width = std::max<size_t>(40, model_.layout().width > 8 ? model_.layout().width - 8 : 40);
    model_.show_plan(plan_lines(*snapshot, *p, pids, config_.kill, width),
                     p->count(reap::Action::Signal));
    plan_ = std::move(*p);
  }

  void execute() {
    if (!plan_) return;
    // The signal the dialog's answer chose; grace and waits are the command's.
    KillConfig kill = config_.kill;
    kill.exec.signal = model_.kill_choice().signal;
    kill.exec.escalate = model_.kill_choice().escalate;
    job_ = std::make_unique<KillJob>(world_, std::move(*plan_), kill, config_.announce);
    plan_.reset();
    job_->start();
  }

  // True when the screen must be redrawn.
  bool poll_job() {
    if (!job_) return false;
    if (job_->finished()) {
      size_t width =
          std::max<size_t>(40, model_.layout().width > 8 ? model_.layout().width - 8 : 40);
      const auto& report = job_->report();
      if (job_->error())
        model_.show_outcome({*job_->error()}, false);
      else
        model_.show_outcome(outcome_lines(job_->plan(), report, width),
                            report.exit_code == reap::kExitReleased);
      job_.reset();
      // Show the table without the killed processes at once.
      if (feed_)
        feed_->wake();
      else
        engine_.wake();
      return true;
    }
    std::string progress = job_->progress();
    if (progress == progress_) return false;
    progress_ = progress;
    model_.kill_progress(progress);
    return true;
  }

  std::shared_ptr<const collect::Collector> collector_;
  std::shared_ptr<const reap::World> world_;
  std::shared_ptr<backend::BackendSet> backend_;
  const TopConfig& config_;
  Terminal& term_;
  engine::Engine engine_;                          // not started while the daemon's feed answers
  std::unique_ptr<DaemonFeed> feed_;               // null: the engine samples
  std::shared_ptr<const procfs::IpcResidue> ipc_;  // the latest sample's, if looked for
  TopModel model_;
  std::optional<reap::Plan> plan_;
  std::unique_ptr<KillJob> job_;
  std::string progress_;
};

}  // namespace

TopResult run_top(std::shared_ptr<const collect::Collector> collector,
                  std::shared_ptr<backend::BackendSet> backend, const TopConfig& config) {
  auto term = Terminal::open({config.color, config.mouse});
  if (!term) return {2, false, term.error()};
  try {
    Loop loop(std::move(collector), std::move(backend), config, **term);
    return loop.run();
  } catch (const std::exception& e) {
    (*term)->close();
    return {
        2, true,
        core::Error{std::string("gpureap top failed: ") + e.what(), "please report this as a bug"}};
  }
}

}  // namespace gpureap::tui

#include "policy/runner.h"

#include <pthread.h>

#include <algorithm>

#include "base/log.h"
#include "core/duration.h"
#include "metric/names.h"
#include "policy/audit_record.h"
#include "policy/exemption.h"
#include "text/byte_format.h"

namespace gpureap::policy {
namespace {

using std::chrono::system_clock;

std::string summary(const audit::Record& r) {
  std::string why;
  for (const auto& reason : r.reasons) why += (why.empty() ? "" : ", ") + reason;
  return describe_process(r) + (why.empty() ? "" : ": " + why);
}

// The process of `id` (a PID and its start time) is in the snapshot and is not ending: a zombie
// has ended, whoever has yet to reap it, and one in its exit (killed, its files already closed,
// so no longer a holder) is ending.
bool still_runs(const core::Snapshot& snapshot, const Identity& id) {
  const core::HostProcess* p = snapshot.find(id.pid);
  return id.start_ticks && p && p->stat.start_ticks == *id.start_ticks && p->is_live() &&
         !p->stat.is_exiting();
}

}  // namespace

PolicyRunner::PolicyRunner(std::unique_ptr<ReaperAction> actor) : actor_(std::move(actor)) {
  thread_ = std::thread([this] {
    ::pthread_setname_np(::pthread_self(), "gpureap-policy");
    work();
  });
}

PolicyRunner::~PolicyRunner() {
  stop();
}

void PolicyRunner::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    queue_.clear();
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void PolicyRunner::configure(std::vector<Policy> policies, bool enforce) {
  std::lock_guard lock(mutex_);
  matching_.clear();
  tracker_.configure(std::move(policies), enforce);
  restate_queued(nullptr, nullptr);
}

// An action waits in the queue behind another one's grace and release wait (a minute or more),
// and the sample its decision was made on ages meanwhile: the paused job was resumed, the keeper
// closed its files, the process exited. A decision to signal rests on what is true now, so each
// later sample restates every queued action: one that still matches is planned on that sample;
// one whose match broke signals nothing (and its `after` starts again, as for any broken match).
void PolicyRunner::restate_queued(const sample::Sample* sample,
                                  const std::vector<std::vector<Evaluation>>* evaluations) {
  const auto& policies = tracker_.policies();
  for (Item& item : queue_) {
    if (!item.job || item.job->settled) continue;
    Job& job = *item.job;
    auto unmatched = [&](const std::string& why) {
      std::string decided;
      for (const auto& r : job.task.evaluation.reasons())
        decided += (decided.empty() ? "" : ", ") + r;
      job.settled =
          ActionResult{"unmatched", std::nullopt,
                       "its match broke while it waited its turn: " + why +
                           (decided.empty() ? "" : " (it was decided on: " + decided + ")"),
                       false};
    };
    auto p = std::find_if(policies.begin(), policies.end(),
                          [&](const Policy& x) { return x.name == job.policy.name; });
    if (p == policies.end()) {
      unmatched("the policy was removed from the config");
      continue;
    }
    if (!tracker_.enforced()) {
      unmatched("enforce was turned off");
      continue;
    }
    if (p->action == Action::Notify) {
      unmatched("the policy now only notifies");
      continue;
    }
    if (!sample || !evaluations) continue;
    const Identity& id = job.task.identity;
    const auto& mine = (*evaluations)[static_cast<size_t>(p - policies.begin())];
    auto e = std::find_if(mine.begin(), mine.end(), [&](const Evaluation& x) {
      return x.pid == id.pid && x.start_ticks == id.start_ticks;
    });
    if (e == mine.end()) {
      if (id.start_ticks && !still_runs(*sample->snapshot, id))
        job.settled = ActionResult{"gone", std::nullopt,
                                   "the process exited before it could be ended", false};
      else
        unmatched(id.start_ticks ? "it no longer holds or is listed on a GPU"
                                 : "the driver no longer lists it");
      continue;
    }
    if (!e->matched()) {
      const Check* failed = e->failed();
      unmatched(e->exempt ? *e->exempt
                : failed  ? failed->condition + ": " + failed->detail
                          : "not every condition holds");
      continue;
    }
    job.policy = *p;
    job.task.evaluation = *e;
    job.snapshot = sample->snapshot;
  }
}

void PolicyRunner::add_record_sink(RecordSink sink) {
  sinks_.push_back(std::move(sink));
}

void PolicyRunner::emit(const audit::Record& record, bool final) {
  for (const auto& sink : sinks_) sink(record, final);
}

void PolicyRunner::on_sample(const sample::Sample& sample, const history::History& history) {
  const auto& snapshot = *sample.snapshot;
  MatchContext context{snapshot, snapshot.timestamp,
                       [&history](const core::ProcessRow& row, unsigned gpu, unsigned below) {
                         return history.below_since(history::process_key(row), gpu, below);
                       },
                       exemption_for(snapshot)};
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    std::vector<std::vector<Evaluation>> evaluations;
    for (const auto& p : tracker_.policies()) {
      evaluations.push_back(evaluate(p, context));
      size_t n = 0;
      for (const auto& e : evaluations.back()) n += e.matched();
      matching_[p.name] = n;
    }
    auto exists = [&snapshot](const Identity& id) {
      if (!id.start_ticks) return snapshot.row(id.pid) != nullptr;  // a gone PID still listed
      return still_runs(snapshot, id);
    };
    restate_queued(&sample, &evaluations);
    for (Task& task : tracker_.observe(evaluations, snapshot.timestamp, exists)) {
      const Policy& p = tracker_.policies()[task.policy];
      std::string outcome = task.act ? "acting"
                            : p.action == Action::Notify
                                ? "notified"
                                : "would-" + std::string(to_string(p.action));
      auto record =
          make_record(p, task.evaluation, snapshot, tracker_.enforced(), "decision", outcome);
      record.attempt = task.attempt;
      if (!task.act) ++counts_[{p.name, record.action, outcome}];
      // A retry's decision was recorded with its first attempt: its action record follows.
      if (task.attempt <= 1) {
        std::string line = "policy " + p.name + ": ";
        if (outcome == "notified")
          line += "matched " + summary(record);
        else if (task.act)
          line += record.action + " " + summary(record);
        else
          line += "would " + record.action + " " + summary(record) + " (enforce is off)";
        base::log_notice(line);
        queue_.push_back({std::move(record), !task.act, std::nullopt});
      }
      if (task.act)
        queue_.push_back({std::nullopt, true, Job{p, std::move(task), sample.snapshot}});
    }
  }
  wake_.notify_all();
}

void PolicyRunner::work() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    Item item = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    if (item.record) emit(*item.record, item.final);
    if (item.job) act(*item.job);
    lock.lock();
  }
}

void PolicyRunner::act(const Job& job) {
  ActionRequest request{job.policy, job.task.identity, job.snapshot};
  ActionResult result = job.settled ? *job.settled : actor_->run(request, [this] {
    std::lock_guard lock(mutex_);
    return stopping_;
  });
  auto record =
      make_record(job.policy, job.task.evaluation, *job.snapshot, true, "action", result.outcome);
  record.attempt = job.task.attempt;
  record.released_bytes = result.released_bytes;
  record.detail = result.detail;
  record.signalled = result.signalled;
  Tracker::After after;
  {
    std::lock_guard lock(mutex_);
    if (result.outcome == "unmatched") {
      tracker_.restart(job.policy.name, job.task.identity);
      after = Tracker::After::Done;
    } else {
      after =
          tracker_.finished(job.policy.name, job.task.identity, result.retry, system_clock::now());
    }
    ++counts_[{job.policy.name, record.action, result.outcome}];
    if (after == Tracker::After::GaveUp) ++counts_[{job.policy.name, record.action, "gave-up"}];
  }
  std::string line = "policy " + job.policy.name + ": " + record.action + " " +
                     describe_process(record) + ": " + result.outcome +
                     (result.released_bytes && *result.released_bytes
                          ? ", " + text::human_bytes(*result.released_bytes) + " released"
                          : "") +
                     (result.detail.empty() ? "" : " (" + result.detail + ")");
  if (after == Tracker::After::RetryLater) {
    base::log_warning(line + "; attempt " + std::to_string(job.task.attempt) + " of " +
                      std::to_string(kMaxAttempts) + ", retrying in " +
                      core::format_duration(kFirstRetryAfter * (1 << (job.task.attempt - 1))) +
                      " if it still matches");
  } else if (result.outcome == "released") {
    base::log_notice(line);
  } else {
    base::log_warning(line);
  }
  emit(record, after != Tracker::After::RetryLater);
  if (after == Tracker::After::GaveUp) {
    record.event = "gave-up";
    record.outcome = "gave-up";
    record.signalled.clear();  // the action record before it names them; giving up signals none
    record.detail =
        "gave up after " + std::to_string(job.task.attempt) + " attempts: " + result.detail;
    base::log_error("policy " + job.policy.name + ": gave up on " + describe_process(record) +
                    " after " + std::to_string(job.task.attempt) +
                    " attempts; end it by hand (gpureap kill " +
                    std::to_string(record.process.pid) + ")");
    emit(record, true);
  }
}

PolicyRunner::Status PolicyRunner::status() const {
  std::lock_guard lock(mutex_);
  return {tracker_.enforced(), tracker_.policies(), matching_, tracker_.items(), queue_.size()};
}

void PolicyRunner::add_metrics(std::vector<exporter::MetricFamily>& out) const {
  exporter::MetricFamily actions{
      metric::kPolicyActions,
      "Cleanup policy decisions and actions by result: would-terminate and "
      "would-kill while enforce is off, notified, released, still-held, "
      "survived, refused, not-permitted, gone, unmatched, failed, gave-up",
      exporter::MetricType::Counter,
      {}};
  exporter::MetricFamily matching{metric::kPolicyMatchingProcesses,
                                  "Processes each cleanup policy matches in the latest sample "
                                  "(before its `after` delay)",
                                  exporter::MetricType::Gauge,
                                  {}};
  std::lock_guard lock(mutex_);
  for (const auto& [key, n] : counts_) {
    const auto& [policy, action, result] = key;
    actions.add({{"policy", policy}, {"action", action}, {"result", result}},
                static_cast<double>(n));
  }
  for (const auto& p : tracker_.policies())
    matching.add({{"policy", p.name}},
                 static_cast<double>(matching_.count(p.name) ? matching_.at(p.name) : 0));
  out.push_back(std::move(actions));
  out.push_back(std::move(matching));
}

}  // namespace gpureap::policy

#pragma once
// The daemon's cleanup policies: on every sample, each policy is evaluated over the snapshot
// (with the history for `idle`) and the Tracker decides what is due. Everything slow happens
// in order on the runner's own thread: records go to the record sinks (the audit log, which
// fsyncs, and the alerts), and actions run one at a time through the reaper, so neither a
// slow disk nor a 30-second grace period delays sampling. Every decision and result is
// counted in gpureap_policy_actions_total.
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "audit/record.h"
#include "history/history.h"
#include "policy/reaper_action.h"
#include "policy/tracker.h"
#include "sample/sample.h"

namespace gpureap::policy {

// Receives every record; `final` is false for a decision whose action is still to come and
// for an attempt that will be retried.
using RecordSink = std::function<void(const audit::Record& record, bool final)>;

class PolicyRunner : public sample::SampleConsumer {
 public:
  explicit PolicyRunner(std::unique_ptr<ReaperAction> actor);
  ~PolicyRunner() override;  // stop()

  void configure(std::vector<Policy> policies, bool enforce);
  // Before the first sample.
  void add_record_sink(RecordSink sink);

  void on_sample(const sample::Sample& sample, const history::History& history) override;
  void add_metrics(std::vector<exporter::MetricFamily>& out) const override;

  // Ends the wait of a running action, and the thread; queued actions are dropped.
  void stop();

  // What the runner is doing, for the daemon's /api/v1/policies.
  struct Status {
    bool enforce = false;
    std::vector<Policy> policies;
    std::map<std::string, size_t> matching;  // policy → rows matching in the latest sample
    std::vector<Tracker::Item> tracked;
    size_t queued = 0;  // records and actions waiting for the runner's thread
  };
  Status status() const;

 private:
  struct Job {
    Policy policy;
    Task task;
    std::shared_ptr<const core::Snapshot> snapshot;  // the newest sample the match held in
    // Set while queued when the decision no longer stands (the match broke, the process exited,
    // the policy or enforcement was removed): the job ends with it and signals nothing.
    std::optional<ActionResult> settled;
  };
  // The worker's queue: a record to hand to the sinks, or an action to take.
  struct Item {
    std::optional<audit::Record> record;
    bool final = true;
    std::optional<Job> job;
  };
  void work();
  // Restates the queued actions: against the config always, and against a new sample's
  // evaluations when given. Called with mutex_ held.
  void restate_queued(const sample::Sample* sample,
                      const std::vector<std::vector<Evaluation>>* evaluations);
  void emit(const audit::Record& record, bool final);
  void act(const Job& job);

  std::unique_ptr<ReaperAction> actor_;
  std::vector<RecordSink> sinks_;

  mutable std::mutex mutex_;  // guards everything below
  std::condition_variable wake_;
  Tracker tracker_;
  std::deque<Item> queue_;
  bool stopping_ = false;
  std::map<std::tuple<std::string, std::string, std::string>, uint64_t>
      counts_;                              // policy, action, result
  std::map<std::string, size_t> matching_;  // policy → rows matching now
  std::thread thread_;
};

}  // namespace gpureap::policy

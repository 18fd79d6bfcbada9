#pragma once
// `gpureap run`: runs CMD so that, however it ends, every process it created is gone and its
// GPU memory is back.
//
// - gpureap is a child subreaper, so orphans of the job reparent to it; CMD leads its own
//   process group. Signals reach gpureap through a signalfd (signal_channel.h).
// - SIGINT, SIGTERM, SIGHUP, SIGQUIT are forwarded to the job's process group and start the
//   teardown: after --grace, SIGKILL to every process of the job (job_tree.h), including
//   ones that left the group or the session. --timeout sends SIGTERM the same way.
// - When CMD exits, its leftovers get SIGTERM, then SIGKILL when the grace ends (unless
//   --keep-descendants). A terminating signal during that wait skips the rest of the grace.
// - Job control, on an interactive terminal: the job's group is the terminal's foreground
//   group. When CMD stops (Ctrl-Z, or SIGTTIN after `bg`), gpureap takes the terminal back
//   and stops itself with SIGSTOP, so the shell reports the job as stopped; on SIGCONT (`fg`
//   or `bg`) it hands the terminal back when it is itself in the foreground and continues
//   the job. SIGTSTP sent to gpureap is forwarded to the job's group. Without a terminal (or
//   as PID 1) a stopped job stays stopped until continued or torn down.
// - Every zombie is reaped, as PID 1 of a container too.
#include <chrono>
#include <memory>
#include <optional>

#include "collect/collector.h"
#include "supervise/job_sampling.h"
#include "supervise/job_tree.h"
#include "supervise/options.h"
#include "supervise/run_report.h"
#include "supervise/signal_channel.h"
#include "supervise/teardown.h"
#include "supervise/terminal.h"

namespace gpureap::supervise {

class Supervisor {
 public:
  Supervisor(RunOptions options, collect::Collector collector);
  ~Supervisor();
  // Runs the job to its end, tears down what is left, checks the release. Never throws.
  RunReport run();

 private:
  using Clock = std::chrono::steady_clock;

  bool start();      // false: CMD did not run; report_.exit says why
  void supervise();  // until CMD has exited and its leftovers are gone (or kept)
  void finish();     // release check, sampling results, exit status

  // Event loop pieces (event_loop.cpp).
  void wait_and_dispatch(std::optional<Clock::time_point> until);
  void on_signal(int signal);
  void reap();
  void send_to_job(int signal, ForwardTarget target);
  void request_stop(StopReason reason, std::optional<int> signal);
  void follow_stop();
  void resume_job();
  void begin_cleanup();
  bool rescan(std::vector<core::ProcessStat>& live);
  // --fail-fast (fail_fast.cpp): notes an abnormal exit of a job process, and ends the job
  // when its grace has passed while job processes still hold GPU files.
  void watch_for_failures(Clock::time_point now);
  void note_failure(pid_t pid, const std::string& comm, int wait_status);
  bool job_holds_gpu_files();

  RunOptions options_;
  collect::Collector collector_;
  RunReport report_;
  std::optional<SignalChannel> signals_;
  std::optional<Terminal> terminal_;
  std::shared_ptr<JobMembers> members_;
  std::unique_ptr<Teardown> teardown_;
  std::unique_ptr<JobSampling> sampling_;

  pid_t job_ = 0;  // CMD's pid, also its process group id
  Clock::time_point job_start_, job_end_;
  std::optional<int> wait_status_;  // set once CMD is reaped
  bool job_stopped_ = false;
  std::optional<Clock::time_point> kill_deadline_;
  std::optional<Clock::time_point> killed_at_;  // SIGKILL round sent
  bool hurry_ = false;                          // skip the rest of the grace
  unsigned late_terminating_signals_ = 0;       // received after CMD exited
  bool gave_up_ = false;                        // processes survived SIGKILL
  bool announced_teardown_ = false;             // options_.announce_teardown was called
  std::optional<core::Error> unread_;           // why the last read of the job failed

  // --fail-fast: when to end the job for a failure, and when to look for one next.
  std::optional<Clock::time_point> fail_fast_at_;
  Clock::time_point next_failure_watch_{};
};

}  // namespace gpureap::supervise

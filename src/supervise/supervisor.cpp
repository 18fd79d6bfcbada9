#include "supervise/supervisor.h"

#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>

#include "core/duration.h"
#include "supervise/command_path.h"
#include "supervise/exit_status.h"
#include "supervise/release_check.h"
#include "supervise/spawn.h"

namespace gpureap::supervise {
namespace {

using std::chrono::duration_cast;
using std::chrono::milliseconds;

// The job is found by reading /proc and then signalled by PID: both must be this PID
// namespace's, or gpureap would end strangers. <proc-root>/self names the reader's PID as
// that procfs sees it.
std::optional<core::Error> check_own_procfs(const procfs::ProcFs& proc) {
  if (proc.names_own_processes()) return std::nullopt;
  return core::Error{"the procfs at " + proc.root() +
                         " is not a live procfs of gpureap's PID namespace, so the job's "
                         "processes cannot be found in it",
                     "mount one for this namespace (e.g. `unshare --pid --fork --mount-proc`; "
                     "containers have one), or drop --proc-root"};
}

}  // namespace

Supervisor::Supervisor(RunOptions options, collect::Collector collector)
    : options_(std::move(options)), collector_(std::move(collector)) {}

Supervisor::~Supervisor() = default;

RunReport Supervisor::run() {
  report_.command = options_.command;
  report_.started_at = std::chrono::system_clock::now();
  report_.pid1 = ::getpid() == 1;
  report_.release.timeout = options_.release_timeout;
  report_.gpu.interval = options_.sample_interval;
  if (start()) {
    supervise();
    finish();
  }
  report_.ended_at = std::chrono::system_clock::now();
  return report_;
}

bool Supervisor::start() {
  auto fail = [&](EndCause cause, core::Error error) {
    report_.exit = start_failure(cause, std::move(error));
    report_.release.skipped_because = "the job did not start";
    return false;
  };
  if (options_.command.empty())
    return fail(EndCause::StartFailed, {"no command to run", "write it after `--`"});
  auto channel = SignalChannel::open();
  if (!channel) return fail(EndCause::StartFailed, channel.error());
  signals_.emplace(std::move(*channel));
  if (auto wrong = check_own_procfs(collector_.procfs()))
    return fail(EndCause::StartFailed, *wrong);
  // As PID 1 every orphan of the namespace comes to gpureap anyway.
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0 && !report_.pid1)
    report_.warnings.push_back(std::string("cannot become a child subreaper (") +
                               std::strerror(errno) +
                               "): a process whose parent exits before gpureap sees it is not "
                               "tracked");

  const char* path_env = std::getenv("PATH");
  auto found = find_command(options_.command[0],
                            path_env ? std::optional<std::string>(path_env) : std::nullopt);
  if (auto* bad = std::get_if<CommandNotRunnable>(&found)) return fail(bad->cause, bad->error);

  terminal_.emplace(Terminal::detect());
  report_.interactive = terminal_->interactive();
  SpawnRequest request{std::get<std::string>(found), options_.command, terminal_->fd(), ::getpid()};
  auto spawned = spawn_job(request, *signals_);
  if (auto* bad = std::get_if<CommandNotRunnable>(&spawned)) return fail(bad->cause, bad->error);
  if (auto* err = std::get_if<core::Error>(&spawned)) return fail(EndCause::StartFailed, *err);

  job_ = std::get<Spawned>(spawned).pid;
  job_start_ = Clock::now();
  report_.pid = job_;
  terminal_->give_to(job_);
  members_ = std::make_shared<JobMembers>(::getpid());
  // CMD is gpureap's unreaped child: its stat is there even if it already exited.
  if (auto st = collector_.procfs().read_stat(job_); st && *st) members_->add(**st);
  teardown_ = std::make_unique<Teardown>(collector_.procfs(), *members_, job_);
  sampling_ =
      std::make_unique<JobSampling>(collector_, members_, options_.sample_interval, job_start_);
  sampling_->start();
  return true;
}

void Supervisor::supervise() {
  std::optional<Clock::time_point> timeout_at;
  if (options_.timeout) timeout_at = job_start_ + *options_.timeout;
  milliseconds scan_gap{20};
  bool cleanup = false;
  std::vector<core::ProcessStat> live;
  for (;;) {
    reap();
    auto now = Clock::now();
    if (!wait_status_ && timeout_at && now >= *timeout_at &&
        report_.stop.reason == StopReason::None)
      request_stop(StopReason::Timeout, std::nullopt);
    watch_for_failures(now);
    if (!killed_at_ && (hurry_ || (kill_deadline_ && now >= *kill_deadline_))) {
      if (!wait_status_) report_.stop.killed_after_grace = true;
      rescan(live);
      teardown_->kill(live, !wait_status_);
      killed_at_ = now;
    }
    if (wait_status_ && !cleanup) {
      cleanup = true;
      begin_cleanup();
      if (options_.keep_descendants) {
        if (rescan(live)) report_.kept = teardown_->describe(live);
        break;
      }
      if (!kill_deadline_) kill_deadline_ = now + options_.grace;
    }
    const bool tearing_down = cleanup || killed_at_;
    if (tearing_down) {
      // Unread, the last list read stands and is read again soon: never "none left".
      const bool read = rescan(live);
      if (killed_at_)
        teardown_->kill(live, !wait_status_);
      else {
        if (!announced_teardown_ && !live.empty() && options_.announce_teardown) {
          announced_teardown_ = true;
          options_.announce_teardown(live);
        }
        teardown_->terminate(live);
      }
      if (wait_status_ && read && live.empty()) break;
      // Survivors of SIGKILL are in uninterruptible sleep (or /proc stayed unreadable): report
      // them, do not hang.
      if (killed_at_ && now - *killed_at_ >= options_.release_timeout) {
        gave_up_ = true;
        break;
      }
    }
    std::optional<Clock::time_point> wake;
    auto earlier = [&](Clock::time_point t) {
      if (!wake || t < *wake) wake = t;
    };
    if (!wait_status_ && timeout_at && report_.stop.reason == StopReason::None)
      earlier(*timeout_at);
    if (kill_deadline_ && !killed_at_) earlier(*kill_deadline_);
    if (options_.fail_fast && !wait_status_ && report_.stop.reason == StopReason::None) {
      if (fail_fast_at_) earlier(*fail_fast_at_);
      if (!report_.failed) earlier(next_failure_watch_);
    }
    if (tearing_down) {
      // Only gpureap's own children announce their exit; the others are polled.
      earlier(now + scan_gap);
      scan_gap = std::min(scan_gap * 3 / 2, milliseconds(250));
    }
    wait_and_dispatch(wake);
  }
  report_.leftovers = teardown_->leftovers(live);
  report_.teardown_error = unread_;
  if (gave_up_ && !unread_)
    report_.warnings.push_back(std::to_string(live.size()) +
                               " processes of the job survived SIGKILL for " +
                               core::format_duration(options_.release_timeout) +
                               " (uninterruptible sleep); `gpureap ps` shows where they wait");
  if (!wait_status_) job_end_ = Clock::now();
  report_.runtime = duration_cast<milliseconds>(job_end_ - job_start_);
  report_.teardown = duration_cast<milliseconds>(Clock::now() - job_end_);
}

// Reads the job's live processes into `live`. Where /proc cannot be read (gpureap out of
// descriptors), `live` keeps the last list read and the failure is kept for the report until a
// later read succeeds: false.
bool Supervisor::rescan(std::vector<core::ProcessStat>& live) {
  auto scanned = teardown_->scan();
  if (!scanned) {
    unread_ = scanned.error();
    return false;
  }
  unread_.reset();
  live = std::move(*scanned);
  return true;
}

void Supervisor::finish() {
  const bool timed_out = report_.stop.reason == StopReason::Timeout;
  if (wait_status_) {
    report_.exit = exit_from_wait_status(*wait_status_, timed_out);
  } else {
    // CMD itself survived SIGKILL (uninterruptible sleep): it is gpureap's child still.
    report_.exit.cause = timed_out ? EndCause::TimedOut : EndCause::Signaled;
    report_.exit.code = timed_out ? kExitTimedOut : 128 + SIGKILL;
    report_.exit.signal = SIGKILL;
    report_.exit.error =
        core::Error{"the command did not end after SIGKILL within " +
                        core::format_duration(options_.release_timeout),
                    "it is in uninterruptible sleep; `gpureap ps` shows where it waits (wchan)"};
  }

  auto is_job = [members = members_](pid_t pid, std::optional<uint64_t> start) {
    return members->contains(pid, start);
  };
  if (!report_.kept.empty()) {
    report_.release.skipped_because = "--keep-descendants left " +
                                      std::to_string(report_.kept.size()) +
                                      " processes running; they may still use the GPU";
  } else if (options_.keep_descendants && report_.teardown_error) {
    report_.release.skipped_because =
        "--keep-descendants left the job's processes running, and gpureap could not read which";
  } else {
    const unsigned signals_before = late_terminating_signals_;
    auto pause = [&](milliseconds d) {
      auto until = Clock::now() + d;
      while (Clock::now() < until && late_terminating_signals_ == signals_before)
        wait_and_dispatch(until);
      return late_terminating_signals_ == signals_before;
    };
    report_.release = verify_release(*sampling_, is_job, options_.release_timeout, pause);
  }
  sampling_->stop();
  report_.gpu = sampling_->result();
  reap();
}

}  // namespace gpureap::supervise

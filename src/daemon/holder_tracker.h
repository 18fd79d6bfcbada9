#pragma once
// The daemon's holder tracker: the kernel's events (track::FanotifyWatch on every GPU device
// file, track::ProcEvents for forks and exits) say which processes' open GPU files changed, and
// the engine scans those at once (engine::ScanHints) instead of waiting for a scan interval.
// The tracker owns the sources, the thread that reads them and the lock; what the events mean
// (holders, their forks and ends, final closes, what to scan) is daemon::HolderBook's, which it
// hands each batch under that lock. When events are read and the engine woken is
// daemon::WakePacer's: news (a new holder, a fork, an exit) at once, a storm's events about
// once a second; the events between two wake-ups are taken by one collection. The history keeps
// one point per interval whatever the rate (history::History). Without the kernel's events (not
// root, a container without the capability, an old kernel) it is not started and the daemon
// scans as before.
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/result.h"
#include "daemon/holder_book.h"
#include "daemon/wake_pacer.h"
#include "engine/scan_hints.h"
#include "procfs/proc_fs.h"
#include "track/fanotify_watch.h"
#include "track/proc_events.h"

namespace gpureap::daemon {

class HolderTracker final : public engine::ScanHints {
 public:
  // Watches `files` (the dev root's GPU device files); `proc`: the daemon's proc root, where
  // exits are confirmed; `wake` asks the engine for a collection. An error says why the
  // kernel's events cannot be had, for the daemon's one log line.
  static core::Result<std::shared_ptr<HolderTracker>> start(const std::vector<std::string>& files,
                                                            procfs::ProcFs proc,
                                                            std::function<void()> wake);
  ~HolderTracker() override;  // stop()s
  // Ends the thread (no wake after it returns): before what `wake` reaches goes away.
  void stop();
  HolderTracker(const HolderTracker&) = delete;
  HolderTracker& operator=(const HolderTracker&) = delete;

  engine::ScanRequest take() override;
  void scanned(const core::ProcView& view, bool full) override;
  std::map<pid_t, pid_t> exited_parents() const override;
  std::map<pid_t, std::vector<core::ProcessEnd>> ends() const override;  // HolderBook::ends()

  // Forks are followed through the proc connector; without it (no CAP_NET_ADMIN) a holder's
  // new children are found by the holder scans, and this says why.
  bool follows_forks() const { return procs_.has_value(); }
  const std::optional<std::string>& forks_unavailable() const { return forks_unavailable_; }

  // How the kernel's events name GPU files: by file handle, or (the fallback) by an open file
  // descriptor, which makes the kernel open the device in the daemon for every event.
  track::FanotifyWatch::Source event_source() const { return files_.source(); }
  const std::string& event_source_fallback() const { return files_.fallback_reason(); }

  // HolderBook's, read under the lock.
  TrackerCounters counters() const;
  std::vector<Release> releases() const;
  std::optional<std::chrono::system_clock::time_point> released_by(
      pid_t pid, std::chrono::system_clock::time_point since) const;
  std::optional<std::chrono::system_clock::time_point> began_holding(pid_t pid) const;

 private:
  HolderTracker(track::FanotifyWatch files, core::Result<track::ProcEvents> procs,
                procfs::ProcFs proc, std::function<void()> wake);
  void run();
  // The book's unconfirmed ends due by `now`, checked again (takes mutex_).
  HolderBook::Rechecked recheck_unconfirmed(std::chrono::steady_clock::time_point now);

  track::FanotifyWatch files_;
  std::optional<track::ProcEvents> procs_;
  std::optional<std::string> forks_unavailable_;
  std::function<void()> wake_;
  int stop_fd_ = -1;  // an eventfd: the destructor ends run()'s poll
  WakePacer pacer_;   // only run()'s thread touches it
  std::thread thread_;

  mutable std::mutex mutex_;
  HolderBook book_;  // under mutex_
};

}  // namespace gpureap::daemon

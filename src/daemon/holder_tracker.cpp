#include "daemon/holder_tracker.h"

#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace gpureap::daemon {

core::Result<std::shared_ptr<HolderTracker>> HolderTracker::start(
    const std::vector<std::string>& files, procfs::ProcFs proc, std::function<void()> wake) {
  if (files.empty())
    return core::Error{"no GPU device file to watch under the dev root", "holder scans only"};
  auto watch = track::FanotifyWatch::open(files);
  if (!watch) return watch.error();
  return std::shared_ptr<HolderTracker>(new HolderTracker(
      std::move(*watch), track::ProcEvents::open(), std::move(proc), std::move(wake)));
}

HolderTracker::HolderTracker(track::FanotifyWatch files, core::Result<track::ProcEvents> procs,
                             procfs::ProcFs proc, std::function<void()> wake)
    : files_(std::move(files)),
      wake_(std::move(wake)),
      stop_fd_(::eventfd(0, EFD_CLOEXEC)),
      book_(std::move(proc)) {
  if (procs)
    procs_.emplace(std::move(*procs));
  else
    forks_unavailable_ = procs.error().text();
  thread_ = std::thread([this] {
    ::pthread_setname_np(::pthread_self(), "gpureap-events");  // its CPU apart (top -H, bench)
    run();
  });
}

HolderTracker::~HolderTracker() {
  stop();
  if (stop_fd_ >= 0) ::close(stop_fd_);
}

void HolderTracker::stop() {
  if (!thread_.joinable()) return;
  uint64_t one = 1;
  if (stop_fd_ < 0 || ::write(stop_fd_, &one, sizeof one) != sizeof one) {
    thread_.detach();  // cannot be told: it ends with the process
    return;
  }
  thread_.join();
}

void HolderTracker::run() {
  using Clock = std::chrono::steady_clock;
  std::optional<Clock::time_point> next_recheck;  // of an unconfirmed end
  for (;;) {
    const auto now = Clock::now();
    if (auto due = pacer_.wake_due(); due && now >= *due) {
      pacer_.woke(now);
      if (wake_) wake_();
    }
    const bool files_now = now >= pacer_.next_file_read();
    pollfd fds[3] = {
        {stop_fd_, POLLIN, 0}, {files_now ? files_.fd() : -1, POLLIN, 0}, {-1, POLLIN, 0}};
    if (procs_) fds[2].fd = procs_->fd();
    std::optional<Clock::time_point> until = pacer_.wake_due();
    if (!files_now && (!until || pacer_.next_file_read() < *until)) until = pacer_.next_file_read();
    if (next_recheck && (!until || *next_recheck < *until)) until = next_recheck;
    int timeout = -1;
    if (until) {
      auto left = std::chrono::ceil<std::chrono::milliseconds>(*until - Clock::now());
      timeout = static_cast<int>(std::max<int64_t>(left.count(), 0));
    }
    if (::poll(fds, 3, timeout) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[0].revents) return;
    std::optional<track::FanotifyWatch::Batch> files;
    if (fds[1].revents) files = files_.read();
    // The kernel reports a fork before the child runs, so every fork made before an open just
    // read is queued on the connector by now: the book is handed those forks (and exits) first,
    // and an open under a number a fork handed out again is the new process's (HolderBook).
    if (procs_ && (fds[2].revents || files)) {
      const track::ProcEvents::Batch batch = procs_->read();
      std::unique_lock lock(mutex_);
      const bool news = book_.on_procs(batch);
      lock.unlock();
      if (news) pacer_.news();
    }
    if (files) {
      std::vector<pid_t> pids;
      pids.reserve(files->events.size());
      for (const auto& e : files->events) pids.push_back(e.pid);
      const bool lost = files->overflow;
      {
        std::lock_guard lock(mutex_);
        book_.on_files(std::move(*files));
      }
      pacer_.files_read(pids, lost, Clock::now());
    }
    // Unconfirmed ends change only here (events, checks), so the next check is known until then.
    const HolderBook::Rechecked rechecked = recheck_unconfirmed(Clock::now());
    if (rechecked.changed) pacer_.news();
    next_recheck = rechecked.next;
  }
}

HolderBook::Rechecked HolderTracker::recheck_unconfirmed(
    std::chrono::steady_clock::time_point now) {
  std::lock_guard lock(mutex_);
  return book_.recheck_unconfirmed(now);
}

engine::ScanRequest HolderTracker::take() {
  std::lock_guard lock(mutex_);
  return book_.take();
}

void HolderTracker::scanned(const core::ProcView& view, bool full) {
  std::lock_guard lock(mutex_);
  book_.scanned(view, full);
}

std::map<pid_t, pid_t> HolderTracker::exited_parents() const {
  std::lock_guard lock(mutex_);
  return book_.exited_parents();
}

std::map<pid_t, std::vector<core::ProcessEnd>> HolderTracker::ends() const {
  std::lock_guard lock(mutex_);
  return book_.ends();
}

TrackerCounters HolderTracker::counters() const {
  std::lock_guard lock(mutex_);
  return book_.counters();
}

std::vector<Release> HolderTracker::releases() const {
  std::lock_guard lock(mutex_);
  return book_.releases();
}

std::optional<std::chrono::system_clock::time_point> HolderTracker::released_by(
    pid_t pid, std::chrono::system_clock::time_point since) const {
  std::lock_guard lock(mutex_);
  return book_.released_by(pid, since);
}

std::optional<std::chrono::system_clock::time_point> HolderTracker::began_holding(pid_t pid) const {
  std::lock_guard lock(mutex_);
  return book_.began_holding(pid);
}

}  // namespace gpureap::daemon

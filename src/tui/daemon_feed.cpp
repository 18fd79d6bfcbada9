#include "tui/daemon_feed.h"

namespace gpureap::tui {

DaemonFeed::DaemonFeed(SnapshotFetch fetch, std::shared_ptr<const collect::Collector> host,
                       std::chrono::milliseconds interval)
    : fetch_(std::move(fetch)), host_(std::move(host)), interval_(interval) {}

DaemonFeed::~DaemonFeed() {
  stop();
}

bool DaemonFeed::fetch_once() {
  auto began = std::chrono::steady_clock::now();
  auto snapshot = fetch_();
  if (!snapshot) return false;
  auto c = std::make_shared<engine::Collection>();
  c->snapshot = std::make_shared<const core::Snapshot>(std::move(*snapshot));
  c->host = host_->host_stats();
  c->began = began;
  c->ended = std::chrono::steady_clock::now();
  std::lock_guard lock(mutex_);
  c->sequence = published_.rounds + 1;
  published_.latest = std::move(c);
  published_.rounds++;
  return true;
}

bool DaemonFeed::start() {
  if (!fetch_ || !fetch_once()) return false;
  thread_ = std::thread([this] { run(); });
  return true;
}

void DaemonFeed::run() {
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      cv_.wait_for(lock, interval_, [&] { return stopping_ || woken_; });
      if (stopping_) return;
      woken_ = false;
    }
    if (!fetch_once()) {
      std::lock_guard lock(mutex_);
      failed_ = true;
      return;
    }
  }
}

void DaemonFeed::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  // A fetch in progress ends within the client's deadline (2 s).
  if (thread_.joinable()) thread_.join();
}

void DaemonFeed::wake() {
  {
    std::lock_guard lock(mutex_);
    woken_ = true;
  }
  cv_.notify_all();
}

engine::Published DaemonFeed::published() const {
  std::lock_guard lock(mutex_);
  return published_;
}

bool DaemonFeed::failed() const {
  std::lock_guard lock(mutex_);
  return failed_;
}

}  // namespace gpureap::tui

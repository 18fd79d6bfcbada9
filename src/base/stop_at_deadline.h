#pragma once
// Stops an HTTP client at a deadline for the whole exchange. The client's timeouts apply per
// read and write, so a server that trickles a byte within each would hold an exchange forever:
// this calls the client's stop() at `deadline` (and every 100 ms after, in case it was between
// sockets) until it goes out of scope. Used by every client gpureap points at a peer it does
// not control (alert receivers, Prometheus).
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace gpureap::base {

template <class Client>  // anything with stop(): http::HttpClient
class StopAtDeadline {
 public:
  StopAtDeadline(Client& client, std::chrono::steady_clock::time_point deadline)
      : thread_([this, &client, deadline] {
          std::unique_lock lock(mutex_);
          if (cv_.wait_until(lock, deadline, [this] { return done_; })) return;
          fired_ = true;
          do client.stop();
          while (!cv_.wait_for(lock, std::chrono::milliseconds(100), [this] { return done_; }));
        }) {}
  ~StopAtDeadline() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  StopAtDeadline(const StopAtDeadline&) = delete;
  StopAtDeadline& operator=(const StopAtDeadline&) = delete;
  // The deadline passed before the exchange ended.
  bool fired() {
    std::lock_guard lock(mutex_);
    return fired_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  bool fired_ = false;
  std::thread thread_;  // last: it starts once the rest is there
};

}  // namespace gpureap::base

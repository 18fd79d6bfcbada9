#include "cluster/body_pipe.h"

namespace gpureap::cluster {

bool BodyPipe::write(const char* data, size_t n) {
  if (n == 0) return true;
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return abandoned_ || queued_ < capacity_; });
  if (abandoned_) return false;
  chunks_.emplace_back(data, n);
  queued_ += n;
  changed_.notify_all();
  return true;
}

void BodyPipe::close() {
  std::lock_guard lock(mutex_);
  closed_ = true;
  changed_.notify_all();
}

bool BodyPipe::read(std::string& chunk) {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return abandoned_ || closed_ || !chunks_.empty(); });
  if (abandoned_ || chunks_.empty()) return false;
  chunk = std::move(chunks_.front());
  chunks_.pop_front();
  queued_ -= chunk.size();
  changed_.notify_all();
  return true;
}

void BodyPipe::abandon() {
  std::lock_guard lock(mutex_);
  abandoned_ = true;
  chunks_.clear();
  queued_ = 0;
  changed_.notify_all();
}

BodyPipeBuf::int_type BodyPipeBuf::underflow() {
  if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
  if (!pipe_.read(chunk_)) return traits_type::eof();
  setg(chunk_.data(), chunk_.data(), chunk_.data() + chunk_.size());
  return traits_type::to_int_type(*gptr());
}

}  // namespace gpureap::cluster

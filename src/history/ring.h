#pragma once
// A bounded FIFO that overwrites its oldest element when full. Storage grows on demand up to
// the bound, so a series that holds few points costs little: history memory follows what
// is actually recorded, with a hard ceiling.
#include <algorithm>
#include <cstddef>
#include <vector>

namespace gpureap::history {

template <class T>
class Ring {
 public:
  explicit Ring(size_t max_size = 0) : max_(std::max<size_t>(max_size, 1)) {}

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t max_size() const { return max_; }
  size_t capacity() const { return buf_.size(); }

  // 0 is the oldest element.
  const T& operator[](size_t i) const { return buf_[(head_ + i) % buf_.size()]; }
  T& operator[](size_t i) { return buf_[(head_ + i) % buf_.size()]; }
  const T& front() const { return (*this)[0]; }
  const T& back() const { return (*this)[size_ - 1]; }
  T& back() { return (*this)[size_ - 1]; }

  void push_back(const T& value) {
    if (size_ == max_) {
      buf_[head_] = value;
      head_ = (head_ + 1) % buf_.size();
      return;
    }
    if (size_ == buf_.size()) grow();
    buf_[(head_ + size_) % buf_.size()] = value;
    ++size_;
  }

  void pop_back() {
    if (size_ > 0) --size_;
  }

  void pop_front() {
    if (size_ == 0) return;
    head_ = (head_ + 1) % buf_.size();
    --size_;
  }

  // A smaller bound drops the oldest elements and releases the storage it no longer needs.
  void set_max_size(size_t max_size) {
    max_ = std::max<size_t>(max_size, 1);
    while (size_ > max_) pop_front();
    if (buf_.size() > max_) relayout(max_);
  }

 private:
  void grow() { relayout(std::min(max_, std::max<size_t>(4, buf_.size() * 2))); }

  void relayout(size_t storage) {
    std::vector<T> next(storage);
    for (size_t i = 0; i < size_; ++i) next[i] = (*this)[i];
    buf_ = std::move(next);
    head_ = 0;
  }

  std::vector<T> buf_;
  size_t head_ = 0;
  size_t size_ = 0;
  size_t max_;
};

}  // namespace gpureap::history

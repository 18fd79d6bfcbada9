#pragma once
// An optional value that copies share: copying one costs a pointer, not the value. A process's
// details (command line, user, container, executable: ~540 bytes inline and their strings) are
// read for the few processes a consumer shows, yet every element of a process list carried their
// room, and the daemon keeps several lists at once (each snapshot, and a new list whenever a
// process in it changes). With the details behind a shared pointer a list of thousands of
// processes is a fraction of the size, and the lists' copies share each process's details.
//
// Reading is std::optional's interface. Changing through a non-const access copies the value
// first when another copy shares it (copy on write): a change never shows in a copy already
// made, as with std::optional.
#include <atomic>
#include <memory>
#include <optional>
#include <utility>

namespace gpureap::core {

template <class T>
class SharedValue {
 public:
  using value_type = T;

  SharedValue() = default;
  SharedValue(std::nullopt_t) {}  // NOLINT(google-explicit-constructor): std::optional's stand-in
  SharedValue(T value)            // NOLINT(google-explicit-constructor)
      : value_(std::make_shared<T>(std::move(value))) {}
  SharedValue(std::optional<T> value) {  // NOLINT(google-explicit-constructor)
    if (value) value_ = std::make_shared<T>(std::move(*value));
  }

  bool has_value() const { return value_ != nullptr; }
  explicit operator bool() const { return has_value(); }

  const T& operator*() const { return *value_; }
  const T* operator->() const { return value_.get(); }
  const T& value() const {
    if (!value_) throw std::bad_optional_access();
    return *value_;
  }
  T& operator*() { return edit(); }
  T* operator->() { return &edit(); }
  T& value() {
    if (!value_) throw std::bad_optional_access();
    return edit();
  }

  template <class... Args>
  T& emplace(Args&&... args) {
    value_ = std::make_shared<T>(std::forward<Args>(args)...);
    return *value_;
  }
  void reset() { value_.reset(); }

  // A copy as a std::optional, for what takes one.
  std::optional<T> optional() const { return value_ ? std::optional<T>(*value_) : std::nullopt; }

 private:
  T& edit() {
    if (value_ && value_.use_count() != 1) {
      value_ = std::make_shared<T>(*value_);
    } else {
      // The other copies that shared the value have let go; what they did with it happened
      // before (their release, this acquire), so changing it in place is safe.
      std::atomic_thread_fence(std::memory_order_acquire);
    }
    return *value_;
  }

  std::shared_ptr<T> value_;
};

}  // namespace gpureap::core

#pragma once
// A list that copies share: copying one costs a pointer, not the elements. The daemon keeps
// several snapshots at once (the latest, the one before, doctor's settle anchors) and they are
// taken from the same scan of /proc, so they share its process list instead of each holding a
// copy of thousands of processes.
//
// Reading is a std::vector's const interface (and a const std::vector& where one is asked
// for). Changing goes through edit(), which copies the elements first when another list shares
// them (copy on write): a change never shows in a snapshot already taken. There is no
// non-const begin() or operator[], so a loop that only reads never copies by accident.
#include <atomic>
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <utility>
#include <vector>

namespace gpureap::core {

template <class T>
class SharedList {
 public:
  using value_type = T;
  using size_type = std::size_t;
  using const_reference = const T&;
  using reference = const T&;
  using const_iterator = typename std::vector<T>::const_iterator;
  using iterator = const_iterator;

  SharedList() = default;
  SharedList(std::vector<T> items)  // NOLINT(google-explicit-constructor): a vector's stand-in
      : items_(std::make_shared<std::vector<T>>(std::move(items))) {}
  SharedList(std::initializer_list<T> items) : SharedList(std::vector<T>(items)) {}
  SharedList& operator=(std::vector<T> items) {
    items_ = std::make_shared<std::vector<T>>(std::move(items));
    return *this;
  }
  SharedList& operator=(std::initializer_list<T> items) { return *this = std::vector<T>(items); }

  const std::vector<T>& items() const { return items_ ? *items_ : empty_list(); }
  operator const std::vector<T>&() const { return items(); }  // NOLINT(google-explicit-constructor)

  const_iterator begin() const { return items().begin(); }
  const_iterator end() const { return items().end(); }
  size_type size() const { return items().size(); }
  bool empty() const { return items().empty(); }
  const T& operator[](size_type i) const { return items()[i]; }
  const T& front() const { return items().front(); }
  const T& back() const { return items().back(); }

  // The elements to change, no longer shared with any other list (copied first if they were).
  std::vector<T>& edit() {
    if (!items_) {
      items_ = std::make_shared<std::vector<T>>();
    } else if (items_.use_count() != 1) {
      items_ = std::make_shared<std::vector<T>>(*items_);
    } else {
      // The other lists that shared these elements have let go; what they did with them
      // happened before (their release, this acquire), so changing them in place is safe.
      std::atomic_thread_fence(std::memory_order_acquire);
    }
    return *items_;
  }
  void push_back(T item) { edit().push_back(std::move(item)); }

  // Both lists hold the very same elements (one was copied from the other, and neither was
  // changed since).
  bool shares_with(const SharedList& other) const {
    return items_ != nullptr && items_ == other.items_;
  }

 private:
  static const std::vector<T>& empty_list() {
    static const std::vector<T> none;
    return none;
  }

  std::shared_ptr<std::vector<T>> items_;
};

}  // namespace gpureap::core

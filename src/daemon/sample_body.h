#pragma once
// The daemon's HTTP bodies, built with bounded memory.
//
// BuildGate: one document at a time. A JSON document is built as a tree many times the size of
// its text; the server's workers building pages side by side would each hold one, and the
// allocator would keep the high-water mark of them all. Behind the gate at most one tree is
// alive, and what it used is handed back to the system (malloc_trim) before the next.
//
// SampleBody: one HTTP body per published sample, built by the first request that asks for it
// and shared by every client that asks before the next sample: however many clients poll a
// page, the daemon builds it once per sample and holds one copy of it (plus those still being
// sent of an older sample). Thread-safe: while one request builds the body, the others wait for
// it rather than build their own.
#include <malloc.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "sample/sample.h"

namespace gpureap::daemon {

class BuildGate {
 public:
  template <class Build>
  std::string build(const Build& build) {
    std::lock_guard lock(mutex_);
    std::string body = build();
    ::malloc_trim(0);
    return body;
  }

 private:
  std::mutex mutex_;
};

class SampleBody {
 public:
  using Build = std::function<std::string(const sample::Sample&)>;

  explicit SampleBody(BuildGate& gate) : gate_(gate) {}

  std::shared_ptr<const std::string> of(const std::shared_ptr<const sample::Sample>& sample,
                                        const Build& build) {
    std::lock_guard lock(mutex_);
    // A weak reference: the cache keeps no sample alive, and a new sample at the same address
    // cannot be taken for the old one.
    if (!body_ || built_from_.lock() != sample) {
      body_.reset();  // the old body goes before the new one is built (clients sent it keep it)
      body_ = std::make_shared<const std::string>(gate_.build([&] { return build(*sample); }));
      built_from_ = sample;
    }
    return body_;
  }

 private:
  BuildGate& gate_;
  std::mutex mutex_;
  std::weak_ptr<const sample::Sample> built_from_;
  std::shared_ptr<const std::string> body_;
};

}  // namespace gpureap::daemon

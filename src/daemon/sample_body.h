#pragma once
// One HTTP body per published sample, built by the first request that asks for it and shared by
// every client that asks before the next sample: however many clients poll a page, the daemon
// builds it once per sample and holds one copy of it (plus those still being sent of an older
// sample). Thread-safe: while one request builds the body, the others wait for it rather than
// build their own.
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "sample/sample.h"

namespace gpureap::daemon {

class SampleBody {
 public:
  using Build = std::function<std::string(const sample::Sample&)>;

  std::shared_ptr<const std::string> of(const std::shared_ptr<const sample::Sample>& sample,
                                        const Build& build) {
    std::lock_guard lock(mutex_);
    // A weak reference: the cache keeps no sample alive, and a new sample at the same address
    // cannot be taken for the old one.
    if (!body_ || built_from_.lock() != sample) {
      body_ = std::make_shared<const std::string>(build(*sample));
      built_from_ = sample;
    }
    return body_;
  }

 private:
  std::mutex mutex_;
  std::weak_ptr<const sample::Sample> built_from_;
  std::shared_ptr<const std::string> body_;
};

}  // namespace gpureap::daemon

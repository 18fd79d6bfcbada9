#pragma once
// Prometheus's query answers read back strictly and bounded, as they stream in: every answer is
// untrusted (a Prometheus anyone can push series into, a proxy, a port someone else took). The
// JSON is read event by event (no document is built), and the answer is refused at the first
// event past a limit: nesting deeper than an answer has, too many series or labels, labels
// longer than any name gpureap writes, more points than asked for, or more series kept than
// the answer's bound or the command's budget. So memory stays a small multiple of what is kept,
// never of what is sent. A label value is kept as sent: the views escape it for the terminal, JSON
// or HTML.
#include <atomic>
#include <cstddef>
#include <istream>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.h"

namespace gpureap::cluster {

using Labels = std::map<std::string, std::string>;

struct Sample {
  Labels labels;  // __name__ included when Prometheus keeps it
  double time = 0;
  double value = 0;  // finite: a series whose value is NaN or infinite is skipped
};

struct RangeSeries {
  Labels labels;
  std::vector<std::pair<double, double>> points;  // (time, value), finite values only
};

template <class T>
struct Answer {
  std::vector<T> series;
  size_t skipped = 0;                 // series dropped: a value that is no finite number
  std::vector<std::string> warnings;  // Prometheus's own, as sent (escape before showing)
  size_t kept_bytes = 0;              // what the series take in memory, as AnswerLimits counts
};

// What several answers may keep together; answers read on several threads take from it at once.
class KeptBudget {
 public:
  explicit KeptBudget(size_t bytes) : bound_(bytes), left_(bytes) {}
  bool take(size_t bytes) {
    size_t left = left_.load();
    do
      if (left < bytes) return false;
    while (!left_.compare_exchange_weak(left, left - bytes));
    return true;
  }
  void give_back(size_t bytes) { left_ += bytes; }
  size_t bound() const { return bound_; }

 private:
  const size_t bound_;
  std::atomic<size_t> left_;
};

struct AnswerLimits {
  size_t max_series = 500'000;
  size_t max_labels = 64;         // per series
  size_t max_label_bytes = 4096;  // a label name or value
  size_t max_points = 20'000;     // per series of a range query
  size_t max_total_points = 4'000'000;
  size_t max_kept_bytes = size_t{128} << 20;  // the series kept, as they lie in memory
  // Shared by the answers a command reads (at the same time or one after another), so that
  // together they keep no more than its bound; none: this answer alone is bounded.
  KeptBudget* budget = nullptr;
};

// An instant query's answer (resultType "vector"; a "scalar" is one unlabelled sample), read
// from `in` until its end. An error answer ("status": "error") is an error with Prometheus's
// errorType and message.
core::Result<Answer<Sample>> read_vector_answer(std::istream& in, const AnswerLimits& limits = {});
// A range query's answer (resultType "matrix").
core::Result<Answer<RangeSeries>> read_matrix_answer(std::istream& in,
                                                     const AnswerLimits& limits = {});

// The same, from an answer already in memory.
core::Result<Answer<Sample>> parse_vector_answer(std::string_view body,
                                                 const AnswerLimits& limits = {});
core::Result<Answer<RangeSeries>> parse_matrix_answer(std::string_view body,
                                                      const AnswerLimits& limits = {});

}  // namespace gpureap::cluster

#include "cluster/prom_answer.h"

#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>

#include "text/escape.h"

namespace gpureap::cluster {
namespace {

using nlohmann::json;

// A Prometheus answer nests 6 deep (the answer, data, result, series, values, point); anything
// much deeper is no answer.
constexpr size_t kMaxDepth = 16;
// What one kept label costs beyond its text: a map node holding two strings, as malloc rounds it.
constexpr size_t kLabelCost = 112;

core::Error malformed(const std::string& why) {
  return core::Error{"Prometheus's answer is malformed: " + text::terminal_safe(why),
                     "is --prometheus a Prometheus server (or a compatible one)?"};
}

size_t heap_bytes(const std::string& s) {
  return s.size() > 15 ? s.size() + 1 : 0;
}

// "1.5", "NaN", "+Inf": Prometheus writes sample values as strings. Only finite ones count.
bool finite_value(const std::string& s, double& out) {
  if (s.empty() || s.size() > 64) return false;
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && std::isfinite(out);
}

// Where in the answer an event falls.
enum class In { Top, Data, Warnings, Result, Series, Metric, Value, Values, Point, Skip };

// [time, "value"], as a sample's value, a range point or a scalar result.
struct Pair {
  size_t items = 0;
  double time = 0, value = 0;
  bool finite = false;
};

// nlohmann::json's SAX events for one answer, turned into series as they come; any event past
// a limit stops the reading (returns false) with the reason kept in error_.
template <class T>
class AnswerReader {
 public:
  static constexpr bool kMatrix = std::is_same_v<T, RangeSeries>;

  explicit AnswerReader(const AnswerLimits& limits) : limits_(limits) {}

  core::Result<Answer<T>> read(std::istream& in) {
    const bool done = json::sax_parse(in, this, json::input_format_t::json, true);
    if (!done || error_) return error_.value_or(malformed("it is not JSON"));
    return finish();
  }
  core::Result<Answer<T>> read(std::string_view body) {
    const bool done = json::sax_parse(body.begin(), body.end(), this);
    if (!done || error_) return error_.value_or(malformed("it is not JSON"));
    return finish();
  }

  // The SAX interface.
  bool null() { return other(); }
  bool boolean(bool) { return other(); }
  bool binary(json::binary_t&) { return other(); }
  bool number_integer(json::number_integer_t v) { return number(static_cast<double>(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return number(static_cast<double>(v)); }
  bool number_float(json::number_float_t v, const std::string&) { return number(v); }
  bool string(std::string& s);
  bool key(std::string& k);
  bool start_object(size_t);
  bool end_object();
  bool start_array(size_t);
  bool end_array();
  bool parse_error(size_t position, const std::string&, const nlohmann::detail::exception&) {
    return fail("it is not JSON (at byte " + std::to_string(position) + ")");
  }

 private:
  bool fail(const std::string& why) {
    if (!error_) error_ = malformed(why);
    return false;
  }
  In at() const { return stack_.back().in; }
  bool push(In in) {
    if (stack_.size() >= kMaxDepth)
      return fail("it nests deeper than " + std::to_string(kMaxDepth) + " levels");
    stack_.push_back({in});
    return true;
  }
  bool keep(size_t bytes) {
    kept_ += bytes;
    series_cost_ += bytes;
    if (kept_ > limits_.max_kept_bytes)
      return fail("its series would take more than " +
                  std::to_string(limits_.max_kept_bytes >> 20) + " MiB to hold");
    if (limits_.budget && !limits_.budget->take(bytes))
      return fail("the answers' series would take more than " +
                  std::to_string(limits_.budget->bound() >> 20) + " MiB to hold");
    return true;
  }
  // A series dropped after all: what it took goes back.
  void unkeep(size_t bytes) {
    kept_ -= bytes;
    if (limits_.budget) limits_.budget->give_back(bytes);
  }
  bool pair_number(double v, const char* what) {
    if (pair_.items++ != 0 || !std::isfinite(v)) return fail(what);
    pair_.time = v;
    return true;
  }
  bool pair_string(const std::string& s, const char* what) {
    if (pair_.items++ != 1) return fail(what);
    pair_.finite = finite_value(s, pair_.value);
    return true;
  }
  bool number(double v);
  bool other();
  bool begin_series();
  bool end_series();
  core::Result<Answer<T>> finish();

  struct Frame {
    In in;
  };
  const AnswerLimits& limits_;
  std::vector<Frame> stack_;
  std::string key_;  // the key of the value being read, in the innermost object
  std::optional<core::Error> error_;
  std::string status_, error_type_, error_text_, result_type_;
  bool saw_data_ = false, saw_result_ = false, scalar_ = false;
  Answer<T> out_;
  size_t series_seen_ = 0, total_points_ = 0, kept_ = 0;
  // The series being read.
  Labels labels_;
  bool has_metric_ = false, has_value_ = false;
  Pair pair_, value_;
  std::vector<std::pair<double, double>> points_;
  size_t last_points_ = 0;
  size_t series_cost_ = 0;
};

constexpr const char* kValueShape = "a value is not [time, \"value\"]";
constexpr const char* kPointShape = "a point is not [time, \"value\"]";
constexpr const char* kScalarShape = "a scalar is not [time, \"value\"]";

template <class T>
bool AnswerReader<T>::number(double v) {
  if (stack_.empty()) return fail("it is not a JSON object");
  switch (at()) {
    case In::Value:
      return pair_number(v, kValueShape);
    case In::Point:
      return pair_number(v, kPointShape);
    case In::Result:
      return scalar_ ? pair_number(v, kScalarShape) : fail("a series is not an object");
    case In::Top:
    case In::Data:
    case In::Warnings:
    case In::Series:
    case In::Metric:
    case In::Values:
    case In::Skip:
      return other();
  }
  return false;  // no state of the reader: stop
}

template <class T>
bool AnswerReader<T>::other() {
  if (stack_.empty()) return fail("it is not a JSON object");
  switch (at()) {
    case In::Metric:
      return fail("label " + key_.substr(0, 64) + " is not a string");
    case In::Value:
      return fail(kValueShape);
    case In::Point:
    case In::Values:
      return fail(kPointShape);
    case In::Result:
      return fail(scalar_ ? kScalarShape : "a series is not an object");
    case In::Series:
      if (key_ == "metric" || key_ == "value" || key_ == "values")
        return fail("a series' " + key_ + " is not what Prometheus sends");
      return true;
    case In::Top:
    case In::Data:
    case In::Warnings:
    case In::Skip:
      return true;
  }
  return false;  // no state of the reader: stop
}

template <class T>
bool AnswerReader<T>::string(std::string& s) {
  if (stack_.empty()) return fail("it is not a JSON object");
  switch (at()) {
    case In::Top:
      if (key_ == "status") status_ = s.substr(0, 40);
      if (key_ == "errorType") error_type_ = s.substr(0, 40);
      if (key_ == "error") error_text_ = s.size() > 300 ? s.substr(0, 300) + "…" : s;
      return true;
    case In::Data:
      if (key_ == "resultType") result_type_ = s.substr(0, 40);
      return true;
    case In::Warnings:
      if (out_.warnings.size() < 10) out_.warnings.push_back(s.substr(0, 300));
      return true;
    case In::Metric:
      if (s.size() > limits_.max_label_bytes)
        return fail("a label is longer than " + std::to_string(limits_.max_label_bytes) + " bytes");
      if (!keep(kLabelCost + heap_bytes(key_) + heap_bytes(s))) return false;
      // Copied, not moved: the parser's buffer keeps its room, the label takes only its size.
      labels_.emplace(key_, s);
      return true;
    case In::Value:
      return pair_string(s, kValueShape);
    case In::Point:
      return pair_string(s, kPointShape);
    case In::Result:
      return scalar_ ? pair_string(s, kScalarShape) : fail("a series is not an object");
    case In::Series:
    case In::Values:
    case In::Skip:
      return other();
  }
  return false;  // no state of the reader: stop
}

template <class T>
bool AnswerReader<T>::key(std::string& k) {
  if (at() == In::Metric) {
    if (labels_.size() >= limits_.max_labels)
      return fail("a series has more than " + std::to_string(limits_.max_labels) + " labels");
    if (k.size() > limits_.max_label_bytes)
      return fail("a label is longer than " + std::to_string(limits_.max_label_bytes) + " bytes");
  }
  key_ = std::move(k);
  return true;
}

template <class T>
bool AnswerReader<T>::start_object(size_t) {
  if (stack_.empty()) return push(In::Top);
  switch (at()) {
    case In::Top:
      if (key_ != "data") return push(In::Skip);
      saw_data_ = true;
      return push(In::Data);
    case In::Result:
      if (scalar_) return fail(kScalarShape);
      return begin_series() && push(In::Series);
    case In::Series:
      if (key_ == "metric") {
        has_metric_ = true;
        return push(In::Metric);
      }
      return other() && push(In::Skip);
    case In::Data:
    case In::Warnings:
    case In::Metric:
    case In::Value:
    case In::Values:
    case In::Point:
    case In::Skip:
      return other() && push(In::Skip);
  }
  return false;  // no state of the reader: stop
}

template <class T>
bool AnswerReader<T>::start_array(size_t) {
  if (stack_.empty()) return fail("it is not a JSON object");
  switch (at()) {
    case In::Top:
      return push(key_ == "warnings" ? In::Warnings : In::Skip);
    case In::Data:
      if (key_ != "result") return push(In::Skip);
      if (saw_result_) return fail("it has two results");
      saw_result_ = true;
      scalar_ = !kMatrix && result_type_ == "scalar";
      pair_ = {};
      return push(In::Result);
    case In::Series:
      if (!kMatrix && key_ == "value") {
        pair_ = {};
        return push(In::Value);
      }
      if (kMatrix && key_ == "values") return push(In::Values);
      return push(In::Skip);
    case In::Values:
      if (points_.size() >= limits_.max_points || ++total_points_ > limits_.max_total_points)
        return fail("it has more points than asked for");
      pair_ = {};
      return push(In::Point);
    case In::Warnings:
    case In::Skip:
      return push(In::Skip);
    case In::Result:
    case In::Metric:
    case In::Value:
    case In::Point:
      return other() && push(In::Skip);
  }
  return false;  // no state of the reader: stop
}

template <class T>
bool AnswerReader<T>::end_object() {
  const In was = at();
  stack_.pop_back();
  return was != In::Series || end_series();
}

template <class T>
bool AnswerReader<T>::end_array() {
  const In was = at();
  stack_.pop_back();
  switch (was) {
    case In::Value:
      if (pair_.items != 2) return fail(kValueShape);
      has_value_ = true;
      value_ = pair_;
      return true;
    case In::Values:
      has_value_ = true;
      return true;
    case In::Point:
      if (pair_.items != 2) return fail(kPointShape);
      if (!pair_.finite) return true;
      {
        const size_t room = points_.capacity();
        points_.emplace_back(pair_.time, pair_.value);
        return keep((points_.capacity() - room) * sizeof(points_[0]));
      }
    case In::Result:
      if (!scalar_) return true;
      if (pair_.items != 2 || !pair_.finite) return fail(kScalarShape);
      if constexpr (!kMatrix) out_.series.push_back({{}, pair_.time, pair_.value});
      return true;
    case In::Top:
    case In::Data:
    case In::Warnings:
    case In::Series:
    case In::Metric:
    case In::Skip:
      return true;
  }
  return false;  // no state of the reader: stop
}

template <class T>
bool AnswerReader<T>::begin_series() {
  if (++series_seen_ > limits_.max_series)
    return fail("it has more than " + std::to_string(limits_.max_series) + " series");
  labels_.clear();
  has_metric_ = has_value_ = false;
  series_cost_ = 0;
  if constexpr (kMatrix) {
    // A range query's series have as many points as each other: room for the last one's.
    points_ = {};
    points_.reserve(last_points_);
    if (!keep(points_.capacity() * sizeof(points_[0]))) return false;
  }
  return keep(2 * sizeof(T));  // the series' vector grows to twice what it holds
}

template <class T>
bool AnswerReader<T>::end_series() {
  if (!has_metric_ || !has_value_)
    return fail(kMatrix ? "a series has no values" : "a series has no value");
  if constexpr (kMatrix) {
    last_points_ = points_.size();
    out_.series.push_back({std::move(labels_), std::move(points_)});
  } else {
    if (!value_.finite) {
      ++out_.skipped;
      unkeep(series_cost_);
      return true;
    }
    out_.series.push_back({std::move(labels_), value_.time, value_.value});
  }
  return true;
}

template <class T>
core::Result<Answer<T>> AnswerReader<T>::finish() {
  if (status_.empty()) return malformed("it has no status");
  if (status_ != "success") {
    const std::string type = error_type_.empty() ? "error" : error_type_;
    return core::Error{"Prometheus refused the query (" + text::terminal_safe(type) +
                           "): " + text::terminal_safe(error_text_),
                       type == "timeout" ? "it is overloaded; try again, or narrow with --node"
                                         : "a Prometheus older than 2.x, or not Prometheus?"};
  }
  if (!saw_data_) return malformed("it has no data");
  if (result_type_.empty()) return malformed("it has no resultType");
  const std::string want = kMatrix ? "matrix" : "vector";
  if (result_type_ != want && !(!kMatrix && result_type_ == "scalar"))
    return malformed("resultType is " + result_type_ + ", not " + want);
  if (!saw_result_) return malformed("its result is not an array");
  out_.kept_bytes = kept_;
  return std::move(out_);
}

}  // namespace

core::Result<Answer<Sample>> read_vector_answer(std::istream& in, const AnswerLimits& limits) {
  return AnswerReader<Sample>(limits).read(in);
}

core::Result<Answer<RangeSeries>> read_matrix_answer(std::istream& in, const AnswerLimits& limits) {
  return AnswerReader<RangeSeries>(limits).read(in);
}

core::Result<Answer<Sample>> parse_vector_answer(std::string_view body,
                                                 const AnswerLimits& limits) {
  return AnswerReader<Sample>(limits).read(body);
}

core::Result<Answer<RangeSeries>> parse_matrix_answer(std::string_view body,
                                                      const AnswerLimits& limits) {
  return AnswerReader<RangeSeries>(limits).read(body);
}

}  // namespace gpureap::cluster

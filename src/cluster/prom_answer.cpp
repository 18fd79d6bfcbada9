#include "cluster/prom_answer.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "text/escape.h"

namespace gpureap::cluster {
namespace {

using nlohmann::json;

// A Prometheus answer nests 5 deep (data, result, series, value, pair); anything much deeper
// is no answer, and would make the recursive parser recurse as deep as the body is long.
constexpr size_t kMaxDepth = 16;

core::Error malformed(const std::string& why) {
  return core::Error{"Prometheus's answer is malformed: " + text::terminal_safe(why),
                     "is --prometheus a Prometheus server (or a compatible one)?"};
}

// "1.5", "NaN", "+Inf": Prometheus writes sample values as strings. Only finite ones count.
bool finite_value(const json& v, double& out) {
  if (!v.is_string()) return false;
  const auto& s = v.get_ref<const std::string&>();
  if (s.empty() || s.size() > 64) return false;
  char* end = nullptr;
  std::string copy = s;
  out = std::strtod(copy.c_str(), &end);
  return end == copy.c_str() + copy.size() && std::isfinite(out);
}

bool time_of(const json& t, double& out) {
  if (!t.is_number()) return false;
  out = t.get<double>();
  return std::isfinite(out);
}

core::Result<Labels> labels_of(const json& metric, const AnswerLimits& limits) {
  Labels labels;
  if (!metric.is_object()) return malformed("a series' metric is not an object");
  if (metric.size() > limits.max_labels)
    return malformed("a series has " + std::to_string(metric.size()) + " labels");
  for (const auto& [name, value] : metric.items()) {
    if (!value.is_string()) return malformed("label " + name.substr(0, 64) + " is not a string");
    const auto& v = value.get_ref<const std::string&>();
    if (name.size() > limits.max_label_bytes || v.size() > limits.max_label_bytes)
      return malformed("a label is longer than " + std::to_string(limits.max_label_bytes) +
                       " bytes");
    labels.emplace(name, v);
  }
  return labels;
}

// The "data" of a success answer, or the error it words.
core::Result<json> data_of(std::string_view body, const char* want) {
  if (json_depth(body, kMaxDepth + 1) > kMaxDepth)
    return malformed("it nests deeper than " + std::to_string(kMaxDepth) + " levels");
  auto doc = json::parse(body.begin(), body.end(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return malformed("it is not a JSON object");
  auto status = doc.find("status");
  if (status == doc.end() || !status->is_string()) return malformed("it has no status");
  if (*status != "success") {
    std::string type = doc.value("errorType", std::string("error"));
    std::string message = doc.value("error", std::string());
    if (message.size() > 300) message = message.substr(0, 300) + "…";
    return core::Error{"Prometheus refused the query (" + text::terminal_safe(type.substr(0, 40)) +
                           "): " + text::terminal_safe(message),
                       type == "timeout" ? "it is overloaded; try again, or narrow with --node"
                                         : "a Prometheus older than 2.x, or not Prometheus?"};
  }
  auto data = doc.find("data");
  if (data == doc.end() || !data->is_object()) return malformed("it has no data");
  auto type = data->find("resultType");
  if (type == data->end() || !type->is_string()) return malformed("it has no resultType");
  if (*type != want && !(std::string_view(want) == "vector" && *type == "scalar"))
    return malformed("resultType is " + type->get<std::string>().substr(0, 40) + ", not " + want);
  return doc;
}

template <class T>
void warnings_of(const json& doc, Answer<T>& out) {
  auto w = doc.find("warnings");
  if (w == doc.end() || !w->is_array()) return;
  for (const auto& x : *w)
    if (x.is_string() && out.warnings.size() < 10)
      out.warnings.push_back(x.get<std::string>().substr(0, 300));
}

}  // namespace

size_t json_depth(std::string_view j, size_t stop) {
  size_t depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : j) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > deepest) deepest = depth;
      if (deepest >= stop) return deepest;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

core::Result<Answer<Sample>> parse_vector_answer(std::string_view body,
                                                 const AnswerLimits& limits) {
  auto doc = data_of(body, "vector");
  if (!doc) return doc.error();
  const json& data = (*doc)["data"];
  Answer<Sample> out;
  warnings_of(*doc, out);
  const auto& result = data.find("result");
  if (result == data.end()) return malformed("it has no result");
  if (data["resultType"] == "scalar") {
    Sample s;
    if (!result->is_array() || result->size() != 2 || !time_of((*result)[0], s.time) ||
        !finite_value((*result)[1], s.value))
      return malformed("a scalar is not [time, \"value\"]");
    out.series.push_back(std::move(s));
    return out;
  }
  if (!result->is_array()) return malformed("result is not an array");
  if (result->size() > limits.max_series)
    return malformed("it has " + std::to_string(result->size()) + " series, more than " +
                     std::to_string(limits.max_series));
  out.series.reserve(result->size());
  for (const auto& item : *result) {
    if (!item.is_object()) return malformed("a series is not an object");
    auto metric = item.find("metric");
    auto value = item.find("value");
    if (metric == item.end() || value == item.end()) return malformed("a series has no value");
    auto labels = labels_of(*metric, limits);
    if (!labels) return labels.error();
    Sample s;
    if (!value->is_array() || value->size() != 2 || !time_of((*value)[0], s.time))
      return malformed("a value is not [time, \"value\"]");
    if (!finite_value((*value)[1], s.value)) {
      ++out.skipped;
      continue;
    }
    s.labels = std::move(*labels);
    out.series.push_back(std::move(s));
  }
  return out;
}

core::Result<Answer<RangeSeries>> parse_matrix_answer(std::string_view body,
                                                      const AnswerLimits& limits) {
  auto doc = data_of(body, "matrix");
  if (!doc) return doc.error();
  const json& data = (*doc)["data"];
  Answer<RangeSeries> out;
  warnings_of(*doc, out);
  auto result = data.find("result");
  if (result == data.end() || !result->is_array()) return malformed("result is not an array");
  if (result->size() > limits.max_series)
    return malformed("it has " + std::to_string(result->size()) + " series");
  size_t total = 0;
  for (const auto& item : *result) {
    if (!item.is_object()) return malformed("a series is not an object");
    auto metric = item.find("metric");
    auto values = item.find("values");
    if (metric == item.end() || values == item.end() || !values->is_array())
      return malformed("a series has no values");
    if (values->size() > limits.max_points || (total += values->size()) > limits.max_total_points)
      return malformed("it has more points than asked for");
    auto labels = labels_of(*metric, limits);
    if (!labels) return labels.error();
    RangeSeries r;
    r.labels = std::move(*labels);
    for (const auto& p : *values) {
      double t = 0, v = 0;
      if (!p.is_array() || p.size() != 2 || !time_of(p[0], t))
        return malformed("a point is not [time, \"value\"]");
      if (finite_value(p[1], v)) r.points.emplace_back(t, v);
    }
    out.series.push_back(std::move(r));
  }
  return out;
}

}  // namespace gpureap::cluster

#pragma once
// What the history module's JSON documents share (the history's series, the incident journal):
// times as Unix seconds with milliseconds, unknown values as null, and a strict reader whose
// errors name the member's path ("gpus[0].samples[3].time"). Inside a reader a wrong member
// throws Malformed; the reader's boundary turns it into a core::Error.
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace gpureap::history::json_fields {

using nlohmann::json;
using TimePoint = std::chrono::system_clock::time_point;

// ---- writing ----

inline double unix_seconds(TimePoint t) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  return static_cast<double>(ms) / 1000.0;
}

template <class T>
inline json maybe(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

// ---- reading ----

// A malformed document throws this inside the reader; the boundary turns it into an Error.
struct Malformed {
  std::string what;
};

inline std::string at(const std::string& where, const char* name) {
  return where.empty() ? name : where + "." + name;
}

inline std::string item(const std::string& where, const char* name, size_t i) {
  return at(where, name) + "[" + std::to_string(i) + "]";
}

inline const json& field(const json& object, const char* name, const std::string& where) {
  if (!object.is_object())
    throw Malformed{(where.empty() ? "the document" : where) + " is not an object"};
  auto it = object.find(name);
  if (it == object.end())
    throw Malformed{(where.empty() ? "the document" : where) + " has no \"" + name + "\""};
  return *it;
}

// A member older documents may lack: null when absent.
inline const json& optional_field(const json& object, const char* name) {
  static const json kNull;
  auto it = object.find(name);
  return it == object.end() ? kNull : *it;
}

inline TimePoint time_of(const json& v, const std::string& where) {
  if (!v.is_number()) throw Malformed{where + " is not a time in Unix seconds"};
  double secs = v.get<double>();
  if (!(secs >= 0 && secs < 1e11)) throw Malformed{where + " is not a time in Unix seconds"};
  return TimePoint(std::chrono::milliseconds(std::llround(secs * 1000)));
}

template <class T>
T integer_of(const json& v, const std::string& where) {
  if (!v.is_number_integer()) throw Malformed{where + " is not an integer"};
  if (v.is_number_unsigned()) {
    if (v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<T>::max()))
      throw Malformed{where + " is out of range"};
    return static_cast<T>(v.get<uint64_t>());
  }
  auto n = v.get<int64_t>();
  if (n < 0 || static_cast<uint64_t>(n) > static_cast<uint64_t>(std::numeric_limits<T>::max()))
    throw Malformed{where + " is out of range"};
  return static_cast<T>(n);
}

inline std::optional<uint64_t> bytes_of(const json& v, const std::string& where) {
  if (v.is_null()) return std::nullopt;
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
    throw Malformed{where + " is not a byte count"};
  return v.get<uint64_t>();
}

// Names are text the document may lack (a process without a user): "" then.
inline std::string string_of(const json& v, const std::string& where) {
  if (v.is_null()) return "";
  if (!v.is_string()) throw Malformed{where + " is not a string"};
  return v.get<std::string>();
}

inline const json& list_of(const json& v, const std::string& where) {
  if (!v.is_array()) throw Malformed{where + " is not a list"};
  return v;
}

// A flag older documents may lack: false then.
inline bool flag_of(const json& v, const std::string& where) {
  if (v.is_null()) return false;
  if (!v.is_boolean()) throw Malformed{where + " is not true or false"};
  return v.get<bool>();
}

inline std::optional<TimePoint> maybe_time_of(const json& v, const std::string& where) {
  if (v.is_null()) return std::nullopt;
  return time_of(v, where);
}

}  // namespace gpureap::history::json_fields

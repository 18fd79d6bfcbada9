#pragma once
// What both wire forms share (snapshot_wire*.cpp, evidence_wire.cpp), private to them: the
// strict reading, where a bad field throws WireError naming its path, which only a decoder's
// entry points catch, so each decoder reads as the struct it fills; and the encoders' checks.
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "core/field_count.h"
#include "output/snapshot_wire.h"

namespace gpureap::output::wire {

using nlohmann::json;

// The struct has N fields, every one carried by its encoder and its decoder.
template <class T, std::size_t N>
constexpr bool carried = core::field_count<T>() == N;

inline json opt_bytes(const std::optional<std::string>& v) {
  return v ? wire_bytes(*v) : json(nullptr);
}

struct WireError {
  std::string message;
  bool other_version = false;  // the document is of another wire version
};

[[noreturn]] inline void fail(const std::string& path, const std::string& what) {
  throw WireError{(path.empty() ? "(document)" : path) + ": " + what};
}

// A name the peer sent, quoted and escaped for any terminal, and kept short.
inline std::string quoted(const std::string& name) {
  std::string text = name.size() > 40 ? name.substr(0, 40) + "..." : name;
  return json(text).dump(-1, ' ', true, json::error_handler_t::replace);
}

// An object whose fields are read one by one: finish() refuses the fields nobody read.
class Object {
 public:
  Object(const json& j, std::string path) : j_(j), path_(std::move(path)) {
    if (!j_.is_object()) fail(path_, "not an object");
  }
  std::string path(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  const json& at(const std::string& key) {
    auto it = j_.find(key);
    if (it == j_.end()) fail(path(key), "missing");
    read_.insert(key);
    return *it;
  }
  void finish() const {
    for (const auto& [key, value] : j_.items())
      if (!read_.count(key)) fail(path(key), "unknown field");
  }

 private:
  const json& j_;
  std::string path_;
  std::set<std::string> read_;
};

template <class T>
T integer(const json& v, const std::string& path) {
  if (!v.is_number_integer()) fail(path, "not an integer");
  if (v.is_number_unsigned()) {
    const auto u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<T>::max())) fail(path, "out of range");
    return static_cast<T>(u);
  }
  const auto i = v.get<int64_t>();
  if constexpr (std::is_unsigned_v<T>) {
    if (i < 0) fail(path, "out of range");
    if (static_cast<uint64_t>(i) > static_cast<uint64_t>(std::numeric_limits<T>::max()))
      fail(path, "out of range");
  } else {
    if (i < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
        i > static_cast<int64_t>(std::numeric_limits<T>::max()))
      fail(path, "out of range");
  }
  return static_cast<T>(i);
}

inline bool boolean(const json& v, const std::string& path) {
  if (!v.is_boolean()) fail(path, "not a boolean");
  return v.get<bool>();
}

inline std::string bytes(const json& v, const std::string& path) {
  auto b = bytes_from_wire(v);
  if (!b) fail(path, "not a string");
  return std::move(*b);
}

inline double real(const json& v, const std::string& path) {
  if (v.is_number()) return v.get<double>();
  if (v == "nan") return std::numeric_limits<double>::quiet_NaN();
  if (v == "inf") return std::numeric_limits<double>::infinity();
  if (v == "-inf") return -std::numeric_limits<double>::infinity();
  fail(path, "not a number");
}

template <class F>
auto optional(const json& v, const std::string& path, F&& decode)
    -> std::optional<decltype(decode(v, path))> {
  if (v.is_null()) return std::nullopt;
  return decode(v, path);
}

template <class F>
auto list(const json& v, const std::string& path, F&& decode)
    -> std::vector<decltype(decode(v, path))> {
  if (!v.is_array()) fail(path, "not an array");
  std::vector<decltype(decode(v, path))> out;
  out.reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    out.push_back(decode(v[i], path + "[" + std::to_string(i) + "]"));
  return out;
}

// Shorthands for the decoders of each field type, to pass to optional() and list().
template <class T>
T int_of(const json& v, const std::string& path) {
  return integer<T>(v, path);
}
inline constexpr auto str = bytes;

}  // namespace gpureap::output::wire

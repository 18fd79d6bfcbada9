#pragma once
// The one codec of the private wire documents (snapshot_wire.h, evidence_wire.h): it encodes
// and decodes any struct that has a description (kFields, output/wire_fields.h) by walking the
// description, and every other value by its type:
//   bool, integers (JSON integers of the type's own range), double (a number, or "nan", "inf",
//   "-inf"), std::string (untrusted bytes: wire_bytes), char (a string of one byte), an enum
//   (its name by text/enum_names.h), std::optional and its stand-ins (null when empty),
//   std::vector and core::SharedList (an array), std::pair and each entry of a std::map
//   ([first, second]), a time_point (nanoseconds since the epoch).
// A type with none of these and no description stops the build at its field.
//
// Decoding is strict: a missing, mistyped or out-of-range value, an unknown key or enum name,
// throws WireError naming its path (`proc.processes[3].stat.state: not a string`); only a
// document's entry points catch it.
#include <chrono>
#include <cmath>
#include <cstddef>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/field_count.h"
#include "core/result.h"
#include "core/shared_list.h"
#include "core/shared_value.h"
#include "output/snapshot_wire.h"
#include "text/enum_names.h"

namespace gpureap::output::wire {

using nlohmann::json;

// --- descriptions ------------------------------------------------------------------------

// One field of a struct as the wire carries it: its key and the member it reads and fills.
template <class Owner, class T>
struct Field {
  using type = T;
  std::string_view name;
  T Owner::*member;
};

template <class Owner, class T>
constexpr Field<Owner, T> field(std::string_view name, T Owner::*member) {
  return {name, member};
}

// A struct's description: a std::tuple of field(...), one for each of its fields. Only the
// structs of wire_fields.h have one.
template <class T>
inline constexpr auto kFields = nullptr;

template <class T>
concept Described = !std::is_null_pointer_v<std::remove_cvref_t<decltype(kFields<T>)>>;

template <class A, class B>
constexpr bool same_field(const A& a, const B& b) {
  if (a.name == b.name) return true;
  if constexpr (std::is_same_v<A, B>) return a.member == b.member;
  return false;
}

// How many fields of `fields` are `f` or share its key.
template <class Fields, class F>
constexpr std::size_t matches(const Fields& fields, const F& f) {
  return std::apply(
      [&](const auto&... other) { return ((same_field(f, other) ? std::size_t{1} : 0) + ... + 0); },
      fields);
}

// The description names every field of T once, each under a key of its own: asserted next to
// each description, so a field added to a struct stops the build there.
template <Described T>
constexpr bool describes_every_field() {
  constexpr auto& fields = kFields<T>;
  if (std::tuple_size_v<std::remove_cvref_t<decltype(fields)>> != core::field_count<T>())
    return false;
  // Each field matches itself only.
  return std::apply([&](const auto&... f) { return (matches(fields, f) + ... + 0); }, fields) ==
         core::field_count<T>();
}

// --- strict reading ----------------------------------------------------------------------

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

inline std::string item_path(const std::string& path, std::size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

// An object whose fields are read one by one: finish() refuses the fields nobody read.
class Object {
 public:
  Object(const json& j, std::string path) : j_(j), path_(std::move(path)) {
    if (!j_.is_object()) fail(path_, "not an object");
  }
  std::string path(std::string_view key) const {
    return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
  }
  const json& at(std::string_view key) {
    auto it = j_.find(std::string(key));
    if (it == j_.end()) fail(path(key), "missing");
    read_.emplace(key);
    return *it;
  }
  void finish() const {
    for (const auto& [key, value] : j_.items())
      if (!read_.count(key)) fail(path(key), "unknown field");
  }

 private:
  const json& j_;
  std::string path_;
  std::set<std::string, std::less<>> read_;
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

inline std::string bytes(const json& v, const std::string& path) {
  auto b = bytes_from_wire(v);
  if (!b) fail(path, "not a string");
  return std::move(*b);
}

// --- the kinds of values -----------------------------------------------------------------

namespace kind {

template <class T>
struct Optional : std::false_type {};
template <class T>
struct Optional<std::optional<T>> : std::true_type {};
template <class T>
struct Optional<core::SharedValue<T>> : std::true_type {};
template <class T>
struct Optional<std::shared_ptr<const T>> : std::true_type {};

template <class T>
struct List : std::false_type {};
template <class T>
struct List<std::vector<T>> : std::true_type {};
template <class T>
struct List<core::SharedList<T>> : std::true_type {};

template <class T>
struct Map : std::false_type {};
template <class K, class V>
struct Map<std::map<K, V>> : std::true_type {};

template <class T>
struct Pair : std::false_type {};
template <class A, class B>
struct Pair<std::pair<A, B>> : std::true_type {};

template <class T>
constexpr bool kTime = std::is_same_v<T, std::chrono::system_clock::time_point>;

template <class T>
constexpr bool kNone = false;

}  // namespace kind

// Nanoseconds are as fine as system_clock is here, so a time point's count is exact.
static_assert(std::ratio_less_equal_v<std::nano, std::chrono::system_clock::period>);

template <class T>
json encode(const T& v);
template <class T>
T decode(const json& v, const std::string& path);

template <class T>
json encode(const T& v) {
  if constexpr (Described<T>) {
    json out = json::object();
    std::apply([&](const auto&... f) { ((out[std::string(f.name)] = encode(v.*f.member)), ...); },
               kFields<T>);
    return out;
  } else if constexpr (std::is_same_v<T, bool>) {
    return v;
  } else if constexpr (std::is_same_v<T, char>) {
    return wire_bytes(std::string(1, v));
  } else if constexpr (std::is_integral_v<T>) {
    return v;
  } else if constexpr (std::is_same_v<T, double>) {
    // JSON has no NaN or infinity: they travel as names, every finite value as itself.
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    return v;
  } else if constexpr (std::is_same_v<T, std::string>) {
    return wire_bytes(v);
  } else if constexpr (std::is_enum_v<T>) {
    static_assert(text::NamedEnum<T>, "an enum on the wire needs names (text/enum_names.h)");
    return std::string(to_string(v));
  } else if constexpr (kind::kTime<T>) {
    return static_cast<int64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(v.time_since_epoch()).count());
  } else if constexpr (kind::Optional<T>::value) {
    return v ? encode(*v) : json(nullptr);
  } else if constexpr (kind::List<T>::value || kind::Map<T>::value) {
    json out = json::array();
    for (const auto& item : v) out.push_back(encode(item));
    return out;
  } else if constexpr (kind::Pair<T>::value) {
    return json::array({encode(v.first), encode(v.second)});
  } else {
    static_assert(kind::kNone<T>, "no wire codec for this type: describe it in wire_fields.h");
  }
}

template <class T>
T decode(const json& v, const std::string& path) {
  if constexpr (Described<T>) {
    Object o(v, path);
    T out{};
    std::apply(
        [&](const auto&... f) {
          ((out.*f.member = decode<typename std::remove_cvref_t<decltype(f)>::type>(
                o.at(f.name), o.path(f.name))),
           ...);
        },
        kFields<T>);
    o.finish();
    return out;
  } else if constexpr (std::is_same_v<T, bool>) {
    if (!v.is_boolean()) fail(path, "not a boolean");
    return v.get<bool>();
  } else if constexpr (std::is_same_v<T, char>) {
    const auto b = bytes(v, path);
    if (b.size() != 1) fail(path, "not one byte");
    return b[0];
  } else if constexpr (std::is_integral_v<T>) {
    return integer<T>(v, path);
  } else if constexpr (std::is_same_v<T, double>) {
    if (v.is_number()) return v.get<double>();
    if (v == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (v == "inf") return std::numeric_limits<double>::infinity();
    if (v == "-inf") return -std::numeric_limits<double>::infinity();
    fail(path, "not a number");
  } else if constexpr (std::is_same_v<T, std::string>) {
    return bytes(v, path);
  } else if constexpr (std::is_enum_v<T>) {
    const auto name = bytes(v, path);
    const auto e = text::enum_from_name<T>(name);
    if (!e) fail(path, "unknown value " + quoted(name));
    return *e;
  } else if constexpr (kind::kTime<T>) {
    return T(std::chrono::duration_cast<typename T::duration>(
        std::chrono::nanoseconds(integer<int64_t>(v, path))));
  } else if constexpr (kind::Optional<T>::value) {
    using Value = std::remove_cvref_t<decltype(*std::declval<T>())>;
    if (v.is_null()) return T{};
    if constexpr (std::is_same_v<T, std::shared_ptr<const Value>>)
      return std::make_shared<const Value>(decode<Value>(v, path));
    else
      return T(decode<Value>(v, path));
  } else if constexpr (kind::List<T>::value) {
    using Item = typename T::value_type;
    if (!v.is_array()) fail(path, "not an array");
    std::vector<Item> out;
    out.reserve(v.size());
    for (std::size_t i = 0; i < v.size(); ++i)
      out.push_back(decode<Item>(v[i], item_path(path, i)));
    return T(std::move(out));
  } else if constexpr (kind::Map<T>::value) {
    using Entry = std::pair<typename T::key_type, typename T::mapped_type>;
    if (!v.is_array()) fail(path, "not an array");
    T out;
    for (std::size_t i = 0; i < v.size(); ++i) {
      auto entry = decode<Entry>(v[i], item_path(path, i));
      if (!out.emplace(std::move(entry)).second)
        fail(item_path(path, i) + "[0]", "the key of an earlier entry");
    }
    return out;
  } else if constexpr (kind::Pair<T>::value) {
    if (!v.is_array() || v.size() != 2) fail(path, "not a [key, value] pair");
    // Braces: the first is read (and refused) before the second.
    return T{decode<typename T::first_type>(v[0], path + "[0]"),
             decode<typename T::second_type>(v[1], path + "[1]")};
  } else {
    static_assert(kind::kNone<T>, "no wire codec for this type: describe it in wire_fields.h");
  }
}

// --- documents ---------------------------------------------------------------------------

// A document's version, read first: a peer of another version may lack or rename any other key.
inline void expect_version(Object& o, std::string_view key, int64_t version) {
  const auto got = integer<int64_t>(o.at(key), o.path(key));
  if (got != version)
    throw WireError{o.path(key) + ": version " + std::to_string(got) +
                        ", this gpureap reads version " + std::to_string(version),
                    true};
}

// What `decode_document()` returns, or its WireError (or any exception, e.g. out of memory for
// a huge document) as an error that starts with `invalid`.
template <class F>
auto decoded(const std::string& invalid, F&& decode_document)
    -> core::Result<decltype(decode_document())> {
  auto error = [&](const std::string& what, bool other_version) {
    return core::Error{invalid + ": " + what,
                       other_version
                           ? "the daemon runs another gpureap version: restart it after an upgrade"
                           : ""};
  };
  try {
    return decode_document();
  } catch (const WireError& e) {
    return error(e.message, e.other_version);
  } catch (const std::exception& e) {
    return error(e.what(), false);
  }
}

}  // namespace gpureap::output::wire

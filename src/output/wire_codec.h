#pragma once
// The one codec of the private wire documents (snapshot_wire.h, evidence_wire.h): it encodes
// and decodes any struct that has a description (kFields, output/wire_fields.h) by walking the
// description, and every other value by its type:
//   bool, integers (JSON integers of the type's own range), double (a number, or "nan", "inf",
//   "-inf"), std::string (untrusted bytes: write_bytes), char (a string of one byte), an enum
//   (its name by text/enum_names.h), std::optional and its stand-ins (null when empty),
//   std::vector and core::SharedList (an array), std::pair and each entry of a std::map
//   ([first, second]), a time_point (nanoseconds since the epoch).
// A type with none of these and no description stops the build at its field.
//
// A megabyte of wire (the evidence of a node of thousands of processes) never becomes a tree of
// nlohmann::json values, which would cost an allocation per key on each side: write() writes
// the text straight from the values, and decode() reads the text's tape (wire_tape.h).
//
// Decoding is strict: a missing, mistyped or out-of-range value, an unknown key or enum name,
// throws WireError naming its path (`proc.processes[3].stat.state: not a string`); only a
// document's entry points catch it.
#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
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
#include "output/wire_tape.h"
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

// Where a value is in the document (`proc.processes[3].stat.state`), made into text only for an
// error: a document of thousands of processes must not build a string per field it reads. A
// path names its parent, which must outlive it, as the decoder's frames do; the root owns its
// text.
class Path {
 public:
  Path(std::string root) : root_(std::move(root)) {}
  Path(const char* root) : root_(root) {}
  Path(const Path& parent, std::string_view key) : parent_(&parent), key_(key) {}
  Path(const Path& parent, std::size_t index) : parent_(&parent), index_(index), is_index_(true) {}

  std::string text() const {
    if (!parent_) return root_;
    std::string up = parent_->text();
    if (is_index_) return up + "[" + std::to_string(index_) + "]";
    return up.empty() ? std::string(key_) : up + "." + std::string(key_);
  }

 private:
  const Path* parent_ = nullptr;
  std::string root_;
  std::string_view key_;
  std::size_t index_ = 0;
  bool is_index_ = false;
};

[[noreturn]] inline void fail(const Path& at, const std::string& what) {
  const auto path = at.text();
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

// An object whose fields are read one by one: finish() refuses the fields nobody read. When as
// many keys were read as the object has, none is left unread (or given twice).
class Object {
 public:
  static constexpr std::size_t kMaxKeys = 32;

  Object(const Value& v, const Path& path) : v_(v), path_(path) {
    if (!v_.is_object()) fail(path_, "not an object");
  }
  Path path(std::string_view key) const { return Path(path_, key); }
  Value at(std::string_view key) {
    auto found = v_.find(key);
    if (!found) fail(path(key), "missing");
    if (!was_read(key)) {
      if (read_count_ == kMaxKeys) fail(path_, "more keys read than an object of the wire has");
      read_[read_count_++] = key;
    }
    return *found;
  }
  void finish() const {
    if (read_count_ == v_.size()) return;
    v_.for_each_member([&](std::string_view key, const Value&) {
      if (!was_read(key)) fail(path(key), "unknown field");
    });
    // Every key was read, yet the object has more: one is given twice.
    fail(path_, "a key given twice");
  }

 private:
  bool was_read(std::string_view key) const {
    return std::find(read_.begin(), read_.begin() + read_count_, key) !=
           read_.begin() + read_count_;
  }

  Value v_;
  const Path path_;
  std::array<std::string_view, kMaxKeys> read_{};
  std::size_t read_count_ = 0;
};

template <class T>
T integer(const Value& v, const Path& path) {
  if (!v.is_number_integer()) fail(path, "not an integer");
  if (v.is_number_unsigned()) {
    const auto u = v.unsigned_();
    if (u > static_cast<uint64_t>(std::numeric_limits<T>::max())) fail(path, "out of range");
    return static_cast<T>(u);
  }
  const auto i = v.integer();
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

// A byte string's wire value (write_bytes): a string, or {"hex": "..."}.
inline std::string bytes(const Value& v, const Path& path) {
  if (v.is_string()) return std::string(v.string());
  if (v.is_object() && v.size() == 1)
    if (auto hex = v.find("hex"); hex && hex->is_string())
      if (auto b = bytes_from_hex(hex->string())) return std::move(*b);
  fail(path, "not a string");
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
void write(std::string& out, const T& v);
template <class T>
T decode(const Value& v, const Path& path);

// --- writing -----------------------------------------------------------------------------

// The key of the next member of the object being written at the end of `out`, after a comma
// but for the first. Keys are the descriptions' and the documents' own names: nothing to escape.
inline void write_key(std::string& out, std::string_view key) {
  out += !out.empty() && out.back() == '{' ? "\"" : ",\"";
  out += key;
  out += "\":";
}

template <class V>
void write_member(std::string& out, std::string_view key, const V& v) {
  write_key(out, key);
  write(out, v);
}

template <class T>
void write_number(std::string& out, T v) {
  char digits[32];
  const auto end = std::to_chars(digits, digits + sizeof digits, v).ptr;
  out.append(digits, end);
  // A double that reads like an integer gets its ".0": it travels as a double (and -0 keeps
  // its sign).
  if constexpr (std::is_floating_point_v<T>)
    if (std::string_view(digits, end).find_first_of(".e") == std::string_view::npos) out += ".0";
}

// Writes the wire's text straight from the values: a snapshot of a large node is a megabyte of
// wire, which a tree of json values would take a hundred thousand allocations to hold.
template <class T>
void write(std::string& out, const T& v) {
  if constexpr (Described<T>) {
    out += '{';
    std::apply([&](const auto&... f) { (write_member(out, f.name, v.*f.member), ...); },
               kFields<T>);
    out += '}';
  } else if constexpr (std::is_same_v<T, bool>) {
    out += v ? "true" : "false";
  } else if constexpr (std::is_same_v<T, char>) {
    write_bytes(out, std::string_view(&v, 1));
  } else if constexpr (std::is_integral_v<T>) {
    write_number(out, v);
  } else if constexpr (std::is_same_v<T, double>) {
    // JSON has no NaN or infinity: they travel as names, every finite value as itself.
    if (std::isnan(v))
      out += "\"nan\"";
    else if (std::isinf(v))
      out += v > 0 ? "\"inf\"" : "\"-inf\"";
    else
      write_number(out, v);
  } else if constexpr (std::is_same_v<T, std::string>) {
    write_bytes(out, v);
  } else if constexpr (std::is_enum_v<T>) {
    static_assert(text::NamedEnum<T>, "an enum on the wire needs names (text/enum_names.h)");
    write_bytes(out, to_string(v));
  } else if constexpr (kind::kTime<T>) {
    write_number(
        out,
        static_cast<int64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(v.time_since_epoch()).count()));
  } else if constexpr (kind::Optional<T>::value) {
    if (v)
      write(out, *v);
    else
      out += "null";
  } else if constexpr (kind::List<T>::value || kind::Map<T>::value) {
    out += '[';
    bool first = true;
    for (const auto& item : v) {
      if (!first) out += ',';
      first = false;
      write(out, item);
    }
    out += ']';
  } else if constexpr (kind::Pair<T>::value) {
    out += '[';
    write(out, v.first);
    out += ',';
    write(out, v.second);
    out += ']';
  } else {
    static_assert(kind::kNone<T>, "no wire codec for this type: describe it in wire_fields.h");
  }
}

// The value as a tree of json values, parsed from what write() writes.
template <class T>
json encode(const T& v) {
  std::string text;
  write(text, v);
  return json::parse(text);
}

template <class T>
T decode(const Value& v, const Path& path) {
  if constexpr (Described<T>) {
    static_assert(core::field_count<T>() <= Object::kMaxKeys);
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
    return v.boolean();
  } else if constexpr (std::is_same_v<T, char>) {
    const auto b = bytes(v, path);
    if (b.size() != 1) fail(path, "not one byte");
    return b[0];
  } else if constexpr (std::is_integral_v<T>) {
    return integer<T>(v, path);
  } else if constexpr (std::is_same_v<T, double>) {
    if (v.is_number()) return v.number();
    const auto name = v.is_string() ? v.string() : std::string_view();
    if (name == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (name == "inf") return std::numeric_limits<double>::infinity();
    if (name == "-inf") return -std::numeric_limits<double>::infinity();
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
    for (Value item : v.items()) out.push_back(decode<Item>(item, Path(path, out.size())));
    return T(std::move(out));
  } else if constexpr (kind::Map<T>::value) {
    using Entry = std::pair<typename T::key_type, typename T::mapped_type>;
    if (!v.is_array()) fail(path, "not an array");
    T out;
    std::size_t i = 0;
    for (Value item : v.items()) {
      const Path at(path, i++);
      auto entry = decode<Entry>(item, at);
      if (!out.emplace(std::move(entry)).second)
        fail(Path(at, std::size_t{0}), "the key of an earlier entry");
    }
    return out;
  } else if constexpr (kind::Pair<T>::value) {
    if (!v.is_array() || v.size() != 2) fail(path, "not a [key, value] pair");
    auto item = v.items().begin();
    const Value first = *item, second = *++item;
    // Braces: the first is read (and refused) before the second.
    return T{decode<typename T::first_type>(first, Path(path, std::size_t{0})),
             decode<typename T::second_type>(second, Path(path, std::size_t{1}))};
  } else {
    static_assert(kind::kNone<T>, "no wire codec for this type: describe it in wire_fields.h");
  }
}

// A value of a document already parsed (tests, fuzzing), decoded as the same text would be.
template <class T>
T decode(const json& v, const Path& path) {
  const auto tape = Tape::of(v);
  return decode<T>(tape.root(), path);
}

// --- documents ---------------------------------------------------------------------------

// A document's version, read first: a peer of another version may lack or rename any other key.
inline void expect_version(Object& o, std::string_view key, int64_t version) {
  const auto got = integer<int64_t>(o.at(key), o.path(key));
  if (got != version)
    throw WireError{o.path(key).text() + ": version " + std::to_string(got) +
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

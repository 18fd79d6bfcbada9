#pragma once
// Test helpers driven by the wire's descriptions (output/wire_fields.h), for the round-trip
// tests of the private wire documents:
//   Filler / filled<T>(): a value whose every described field, at every depth, holds a value
//     of its own, none its default;
//   SameByDescription(a, b): the fields that differ, by the descriptions' keys
//     (".processes[1].stat.comm").
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "output/wire_codec.h"
#include "output/wire_fields.h"
#include "text/enum_names.h"

namespace gpureap::testing {

using output::wire::Described;
using output::wire::kFields;
namespace kind = output::wire::kind;

// Sets every field of a described struct, at every depth, to a value other than its default,
// each leaf to a value of its own: every optional holds one, every list and map two.
class Filler {
 public:
  template <class T>
  void fill(T& v) {
    if constexpr (Described<T>) {
      std::apply([&](const auto&... f) { (fill(v.*f.member), ...); }, kFields<T>);
    } else if constexpr (std::is_same_v<T, bool>) {
      v = !v;
    } else if constexpr (std::is_same_v<T, char>) {
      v = static_cast<char>('a' + next() % 26);
    } else if constexpr (std::is_integral_v<T>) {
      const T old = v;
      do {
        // Rising (pids come sorted, keys distinct); a 64-bit unsigned beyond any int64.
        v = sizeof(T) == 8 && std::is_unsigned_v<T> ? std::numeric_limits<T>::max() - next()
                                                    : static_cast<T>(next());
      } while (v == old);
    } else if constexpr (std::is_same_v<T, double>) {
      v = static_cast<double>(next()) + 0.25;
    } else if constexpr (std::is_same_v<T, std::string>) {
      const auto n = next();
      v = "s" + std::to_string(n) + (n % 2 ? "\xff" : "\xc3\xa9");  // hex, and UTF-8
    } else if constexpr (std::is_enum_v<T>) {
      const auto& all = text::enumerators<T>();
      const T old = v;
      v = all[next() % all.size()];
      if (v == old) v = all[(static_cast<size_t>(old) + 1) % all.size()];
    } else if constexpr (kind::kTime<T>) {
      v = T(std::chrono::nanoseconds(1'700'000'000'000'000'000LL + next()));
    } else if constexpr (kind::Optional<T>::value) {
      using Value = std::remove_cvref_t<decltype(*v)>;
      Value value{};
      fill(value);
      if constexpr (std::is_same_v<T, std::shared_ptr<const Value>>)
        v = std::make_shared<const Value>(std::move(value));
      else
        v = T(std::move(value));
    } else if constexpr (kind::List<T>::value) {
      std::vector<typename T::value_type> items(2);
      for (auto& item : items) fill(item);
      v = T(std::move(items));
    } else if constexpr (kind::Map<T>::value) {
      for (int i = 0; i < 2; ++i) {
        std::pair<typename T::key_type, typename T::mapped_type> entry{};
        fill(entry);
        v.insert(std::move(entry));
      }
    } else if constexpr (kind::Pair<T>::value) {
      fill(v.first);
      fill(v.second);
    } else {
      static_assert(kind::kNone<T>, "the filler lacks a kind of value the codec carries");
    }
  }

 private:
  uint64_t next() { return ++n_; }
  uint64_t n_ = 0;
};

template <class T>
T filled() {
  T v{};
  Filler().fill(v);
  return v;
}

// The paths, by the descriptions' keys, where `a` and `b` differ (NaN equal to NaN).
class Differences {
 public:
  std::vector<std::string> paths;

  template <class T>
  void compare(const T& a, const T& b, const std::string& path) {
    if constexpr (Described<T>) {
      std::apply(
          [&](const auto&... f) {
            (compare(a.*f.member, b.*f.member, path + "." + std::string(f.name)), ...);
          },
          kFields<T>);
    } else if constexpr (kind::Optional<T>::value) {
      if (bool(a) != bool(b)) return paths.push_back(path + " (null on one side)");
      if (a) compare(*a, *b, path);
    } else if constexpr (kind::List<T>::value || kind::Map<T>::value) {
      if (a.size() != b.size()) return paths.push_back(path + " (length)");
      auto x = a.begin();
      auto y = b.begin();
      for (size_t i = 0; x != a.end(); ++i, ++x, ++y)
        compare(*x, *y, path + "[" + std::to_string(i) + "]");
    } else if constexpr (kind::Pair<T>::value) {
      compare(a.first, b.first, path + "[0]");
      compare(a.second, b.second, path + "[1]");
    } else if constexpr (std::is_same_v<T, double>) {
      if (!(a == b || (std::isnan(a) && std::isnan(b)))) paths.push_back(path);
    } else {
      if (!(a == b)) paths.push_back(path);
    }
  }
};

inline ::testing::AssertionResult SameByDescription(const auto& a, const auto& b) {
  Differences d;
  d.compare(a, b, "");
  if (d.paths.empty()) return ::testing::AssertionSuccess();
  auto failure = ::testing::AssertionFailure() << "fields that did not come back:";
  for (const auto& path : d.paths) failure << "\n  " << path;
  return failure;
}

}  // namespace gpureap::testing

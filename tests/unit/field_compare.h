#pragma once
// Every field of the model's structs, compared and checked without a hand-kept list: a struct's
// fields are reached through structured bindings (core::field_count says how many), so a field
// added to a struct is compared the moment it exists. For the round-trip tests of serialisers:
//   FieldDiff: the fields that differ between two values, by path ("snapshot.Snapshot:2.
//     DriverReading:1[1].Gpu:15": field 15 of the second GPU), floating-point NaN equal to NaN;
//   FieldCoverage: the fields of each struct that held their default value in every instance
//     seen, i.e. that a test's data never set (a field a test never sets proves nothing).
#include <cxxabi.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "core/field_count.h"
#include "core/shared_list.h"
#include "core/shared_value.h"

namespace gpureap::testing {
namespace fields {

template <class T>
struct IsOptional : std::false_type {};
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};
template <class T>
struct IsOptional<core::SharedValue<T>> : std::true_type {};
template <class T>
struct IsVector : std::false_type {};
template <class T, class A>
struct IsVector<std::vector<T, A>> : std::true_type {};
// The process list snapshots share: read as the vector it stands for.
template <class T>
struct IsVector<core::SharedList<T>> : std::true_type {};
template <class T>
struct IsMap : std::false_type {};
template <class K, class V, class C, class A>
struct IsMap<std::map<K, V, C, A>> : std::true_type {};
template <class T>
struct IsPair : std::false_type {};
template <class A, class B>
struct IsPair<std::pair<A, B>> : std::true_type {};

// A struct of the model, walked field by field (a std:: class is compared as a whole).
template <class T>
constexpr bool kStruct = std::is_class_v<T>&& std::is_aggregate_v<T> && !IsPair<T>::value;

// The fields of an aggregate as a tuple of references.
template <class T>
auto refs(T& t) {
  constexpr auto n = core::field_count<std::remove_const_t<T>>();
  static_assert(n >= 1 && n <= 32, "refs() binds 1 to 32 fields: add lines for more");
  if constexpr (n == 1) {
    auto& [f0] = t;
    return std::tie(f0);
  } else if constexpr (n == 2) {
    auto& [f0, f1] = t;
    return std::tie(f0, f1);
  } else if constexpr (n == 3) {
    auto& [f0, f1, f2] = t;
    return std::tie(f0, f1, f2);
  } else if constexpr (n == 4) {
    auto& [f0, f1, f2, f3] = t;
    return std::tie(f0, f1, f2, f3);
  } else if constexpr (n == 5) {
    auto& [f0, f1, f2, f3, f4] = t;
    return std::tie(f0, f1, f2, f3, f4);
  } else if constexpr (n == 6) {
    auto& [f0, f1, f2, f3, f4, f5] = t;
    return std::tie(f0, f1, f2, f3, f4, f5);
  } else if constexpr (n == 7) {
    auto& [f0, f1, f2, f3, f4, f5, f6] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6);
  } else if constexpr (n == 8) {
    auto& [f0, f1, f2, f3, f4, f5, f6, f7] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7);
  } else if constexpr (n == 9) {
    auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8);
  } else if constexpr (n == 10) {
    auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9);
  } else if constexpr (n == 11) {
    auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10);
  } else if constexpr (n == 12) {
    auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11);
  } else if constexpr (n == 13) {
    auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12);
  } else if constexpr (n == 14) {
    auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13);
  } else if constexpr (n == 15) {
    auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14);
  } else if constexpr (n == 16) {
    auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15);
  } else if constexpr (n == 17) {
    auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16);
  } else if constexpr (n == 18) {
    auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17);
  } else if constexpr (n == 19) {
    auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17,
                    f18);
  } else if constexpr (n == 20) {
    auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18,
           f19] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17,
                    f18, f19);
  } else if constexpr (n == 21) {
    auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19,
           f20] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17,
                    f18, f19, f20);
  } else if constexpr (n == 22) {
    auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19,
           f20, f21] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17,
                    f18, f19, f20, f21);
  } else if constexpr (n == 23) {
    auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19,
           f20, f21, f22] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17,
                    f18, f19, f20, f21, f22);
  } else if constexpr (n == 24) {
    auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19,
           f20, f21, f22, f23] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17,
                    f18, f19, f20, f21, f22, f23);
  } else if constexpr (n == 25) {
    auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19,
           f20, f21, f22, f23, f24] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17,
                    f18, f19, f20, f21, f22, f23, f24);
  } else if constexpr (n == 26) {
    auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19,
           f20, f21, f22, f23, f24, f25] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17,
                    f18, f19, f20, f21, f22, f23, f24, f25);
  } else if constexpr (n == 27) {
    auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19,
           f20, f21, f22, f23, f24, f25, f26] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17,
                    f18, f19, f20, f21, f22, f23, f24, f25, f26);
  } else if constexpr (n == 28) {
    auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19,
           f20, f21, f22, f23, f24, f25, f26, f27] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17,
                    f18, f19, f20, f21, f22, f23, f24, f25, f26, f27);
  } else if constexpr (n == 29) {
    auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19,
           f20, f21, f22, f23, f24, f25, f26, f27, f28] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17,
                    f18, f19, f20, f21, f22, f23, f24, f25, f26, f27, f28);
  } else if constexpr (n == 30) {
    auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19,
           f20, f21, f22, f23, f24, f25, f26, f27, f28, f29] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17,
                    f18, f19, f20, f21, f22, f23, f24, f25, f26, f27, f28, f29);
  } else if constexpr (n == 31) {
    auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19,
           f20, f21, f22, f23, f24, f25, f26, f27, f28, f29, f30] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17,
                    f18, f19, f20, f21, f22, f23, f24, f25, f26, f27, f28, f29, f30);
  } else if constexpr (n == 32) {
    auto& [f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19,
           f20, f21, f22, f23, f24, f25, f26, f27, f28, f29, f30, f31] = t;
    return std::tie(f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17,
                    f18, f19, f20, f21, f22, f23, f24, f25, f26, f27, f28, f29, f30, f31);
  }
}

template <class T>
std::string type_name() {
  int status = 0;
  char* name = abi::__cxa_demangle(typeid(T).name(), nullptr, nullptr, &status);
  std::string out = status == 0 && name ? name : typeid(T).name();
  std::free(name);
  for (const std::string prefix : {"gpureap::"})
    for (auto at = out.find(prefix); at != std::string::npos; at = out.find(prefix))
      out.erase(at, prefix.size());
  return out;
}

// "snapshot.Snapshot:3.ProcView:0[2]": field 3 of the Snapshot, then field 0 of that ProcView.
template <class T>
std::string field_path(const std::string& path, size_t i) {
  std::string type = type_name<T>();
  if (auto colon = type.rfind("::"); colon != std::string::npos) type.erase(0, colon + 2);
  return path + "." + type + ":" + std::to_string(i);
}

}  // namespace fields

class FieldDiff {
 public:
  template <class T>
  void compare(const T& a, const T& b, const std::string& path) {
    using namespace fields;
    if constexpr (std::is_floating_point_v<T>) {
      if (!(a == b || (std::isnan(a) && std::isnan(b)))) differ(path);
    } else if constexpr (IsOptional<T>::value) {
      if (a.has_value() != b.has_value())
        differ(path + (a ? " (set, then empty)" : " (empty, then set)"));
      else if (a)
        compare(*a, *b, path);
    } else if constexpr (IsVector<T>::value) {
      if (a.size() != b.size()) return differ(path + " (sizes differ)");
      for (size_t i = 0; i < a.size(); ++i)
        compare(a[i], b[i], path + "[" + std::to_string(i) + "]");
    } else if constexpr (IsMap<T>::value) {
      if (a.size() != b.size()) return differ(path + " (sizes differ)");
      auto x = a.begin();
      auto y = b.begin();
      for (size_t i = 0; x != a.end(); ++x, ++y, ++i) {
        compare(x->first, y->first, path + "{" + std::to_string(i) + "}.key");
        compare(x->second, y->second, path + "{" + std::to_string(i) + "}.value");
      }
    } else if constexpr (IsPair<T>::value) {
      compare(a.first, b.first, path + ".first");
      compare(a.second, b.second, path + ".second");
    } else if constexpr (kStruct<T>) {
      compare_fields(refs(a), refs(b), path, std::make_index_sequence<core::field_count<T>()>{},
                     static_cast<const T*>(nullptr));
    } else {
      if (!(a == b)) differ(path);
    }
  }

  std::vector<std::string> differences;

 private:
  void differ(const std::string& path) { differences.push_back(path); }

  template <class Tuple, size_t... I, class T>
  void compare_fields(const Tuple& a, const Tuple& b, const std::string& path,
                      std::index_sequence<I...>, const T*) {
    (compare(std::get<I>(a), std::get<I>(b), fields::field_path<T>(path, I)), ...);
  }
};

// The same, field by field, as FieldDiff compares.
template <class T>
bool same_fields(const T& a, const T& b) {
  FieldDiff d;
  d.compare(a, b, "");
  return d.differences.empty();
}

class FieldCoverage {
 public:
  // Notes which fields of every struct inside `value` differ from a value-initialised struct's.
  template <class T>
  void visit(const T& v) {
    using namespace fields;
    if constexpr (IsOptional<T>::value) {
      if (v) visit(*v);
    } else if constexpr (IsVector<T>::value) {
      for (const auto& e : v) visit(e);
    } else if constexpr (IsMap<T>::value) {
      for (const auto& [key, value] : v) {
        visit(key);
        visit(value);
      }
    } else if constexpr (IsPair<T>::value) {
      visit(v.first);
      visit(v.second);
    } else if constexpr (kStruct<T>) {
      static const T kDefault{};
      auto& set = set_[type_name<T>()];
      set.resize(core::field_count<T>());
      visit_fields(refs(v), refs(kDefault), set,
                   std::make_index_sequence<core::field_count<T>()>{});
    }
  }

  // "core::Gpu field 15" for each field that kept its default everywhere (fields count from 0,
  // in declaration order).
  std::vector<std::string> never_set() const {
    std::vector<std::string> out;
    for (const auto& [type, set] : set_)
      for (size_t i = 0; i < set.size(); ++i)
        if (!set[i]) out.push_back(type + " field " + std::to_string(i));
    return out;
  }

 private:
  template <class Tuple, size_t... I>
  void visit_fields(const Tuple& v, const Tuple& def, std::vector<bool>& set,
                    std::index_sequence<I...>) {
    ((set[I] = set[I] || !same_fields(std::get<I>(v), std::get<I>(def)), visit(std::get<I>(v))),
     ...);
  }

  std::map<std::string, std::vector<bool>> set_;
};

}  // namespace gpureap::testing

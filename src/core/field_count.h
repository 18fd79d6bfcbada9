#pragma once
// How many fields an aggregate has, at compile time: the largest number of initialisers T{...}
// accepts. A serialiser that writes a struct field by field asserts the count next to its code
// (static_assert(core::field_count<T>() == N, ...)), so a field added to the struct stops the
// build there until someone decides how it is carried.
//
// Works for aggregates without base classes (every struct of the model); a field of any type
// counts as one, a nested struct included.
#include <cstddef>
#include <type_traits>

namespace gpureap::core {
namespace detail {

// Converts to the type of any field (never called: only its type is used).
struct AnyField {
  template <class T>
  operator T() const;
};

template <class T, class... Fields>
constexpr std::size_t count_fields() {
  if constexpr (requires { T{Fields{}..., AnyField{}}; })
    return count_fields<T, Fields..., AnyField>();
  else
    return sizeof...(Fields);
}

}  // namespace detail

template <class T>
constexpr std::size_t field_count() {
  static_assert(std::is_aggregate_v<T>, "field_count counts the fields of an aggregate");
  return detail::count_fields<T>();
}

}  // namespace gpureap::core

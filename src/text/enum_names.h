#pragma once
// The one idiom for an enum's stable names (those a user types, or a document or a metric
// carries). The enum's namespace has `to_string(E)`: a switch with a case per enumerator and
// no `default:`, so -Wswitch fails the build when an enumerator has no name, and an empty
// name after the switch for a value that is no enumerator. Everything else comes from that
// one switch: the enumerators in order, the parse of a name, the list a message shows. The
// enumerators must be the enum's default values 0, 1, 2, ... (no `= N`), which
// `enumerators()` relies on and the unit test of each enum checks by round trip.
#include <concepts>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace gpureap::text {

template <typename E>
concept NamedEnum = std::is_enum_v<E> && requires(E e) {
  { to_string(e) } -> std::convertible_to<std::string_view>;
};

// Every enumerator, in the enum's order: its values from 0 up to the first without a name.
template <NamedEnum E>
const std::vector<E>& enumerators() {
  static const std::vector<E> all = [] {
    std::vector<E> out;
    for (std::underlying_type_t<E> v = 0;; ++v) {
      const E e = static_cast<E>(v);
      if (std::string_view(to_string(e)).empty()) break;
      out.push_back(e);
    }
    return out;
  }();
  return all;
}

// The enumerator named `name` exactly, if any.
template <NamedEnum E>
std::optional<E> enum_from_name(std::string_view name) {
  if (name.empty()) return std::nullopt;
  for (E e : enumerators<E>())
    if (std::string_view(to_string(e)) == name) return e;
  return std::nullopt;
}

// "a, b, c": the names, for a message that lists what may be typed.
template <NamedEnum E>
std::string enum_name_list(std::string_view separator = ", ") {
  std::string out;
  for (E e : enumerators<E>()) {
    if (!out.empty()) out += separator;
    out += to_string(e);
  }
  return out;
}

}  // namespace gpureap::text

#pragma once
// An optional value in JSON: the value, or null when it is absent (never a made-up 0 or "").
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

namespace gpureap::output {

template <class T>
nlohmann::json opt(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

// The value as `encode` writes it, or null.
template <class T, class F>
nlohmann::json opt(const std::optional<T>& v, F&& encode) {
  return v ? nlohmann::json(std::forward<F>(encode)(*v)) : nlohmann::json(nullptr);
}

}  // namespace gpureap::output

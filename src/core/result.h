#pragma once
// Result<T>: the value or a user-facing error. Module boundaries return these instead of
// throwing, so a failure always reaches the user as "what failed, why, what to do".
#include <string>
#include <utility>
#include <variant>

namespace gpureap::core {

struct Error {
  std::string message;  // what failed and why
  std::string hint;     // what to do about it; may be empty
  int code = 0;         // the errno of the system call that failed, where one did

  std::string text() const { return hint.empty() ? message : message + ": " + hint; }
};

template <class T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}
  Result(Error error) : v_(std::move(error)) {}

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() { return std::get<0>(v_); }
  const T& value() const { return std::get<0>(v_); }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

}  // namespace gpureap::core

#pragma once
// A JSON document written value by value, into a tree (JsonTree: a nlohmann::json) or straight
// into text (JsonText). A document written against JsonOut is described once and comes out as
// either. The text needs no tree: a node's snapshot (hundreds of rows, forty keys each) built as
// nlohmann::json costs an allocation per key and per string, several times the time of writing
// its text, and the daemon writes one for every sample its live view reads.
//
// The text is the tree's as dump_json writes it, byte for byte, provided the writer gives each
// object's keys in ascending byte order (the order nlohmann::json keeps them in) and no key
// twice: JsonText writes members as they come.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace gpureap::output {

class JsonOut {
 public:
  virtual ~JsonOut() = default;
  virtual void begin_object() = 0;
  virtual void end_object() = 0;
  virtual void begin_array() = 0;
  virtual void end_array() = 0;
  virtual void key(std::string_view name) = 0;  // the next member's, inside an object
  virtual void null() = 0;
  virtual void boolean(bool v) = 0;
  virtual void integer(int64_t v) = 0;
  virtual void natural(uint64_t v) = 0;
  virtual void number(double v) = 0;
  virtual void string(std::string_view v) = 0;      // untrusted bytes: invalid UTF-8 is replaced
  virtual void value(const nlohmann::json& v) = 0;  // a tree, written whole
};

class JsonTree final : public JsonOut {
 public:
  void begin_object() override;
  void end_object() override;
  void begin_array() override;
  void end_array() override;
  void key(std::string_view name) override;
  void null() override;
  void boolean(bool v) override;
  void integer(int64_t v) override;
  void natural(uint64_t v) override;
  void number(double v) override;
  void string(std::string_view v) override;
  void value(const nlohmann::json& v) override;

  nlohmann::json take() { return std::move(root_); }

 private:
  nlohmann::json& place(nlohmann::json v);

  nlohmann::json root_;
  std::vector<nlohmann::json*> open_;  // the containers being written, innermost last
  std::string key_;
};

class JsonText final : public JsonOut {
 public:
  // dump_json's indent: spaces per level, or -1 for one line.
  explicit JsonText(int indent = 2) : indent_(indent) {}

  void begin_object() override;
  void end_object() override;
  void begin_array() override;
  void end_array() override;
  void key(std::string_view name) override;
  void null() override;
  void boolean(bool v) override;
  void integer(int64_t v) override;
  void natural(uint64_t v) override;
  void number(double v) override;
  void string(std::string_view v) override;
  void value(const nlohmann::json& v) override;

  std::string take() { return std::move(out_); }

 private:
  void next();  // before a value or a key: the separator and the indentation
  void close(char bracket);
  void quoted(std::string_view v);

  std::string out_;
  int indent_;
  std::vector<size_t> members_;  // per open container, the values written in it so far
  bool after_key_ = false;
};

// --- values by their type ----------------------------------------------------------------

inline void put(JsonOut& out, bool v) {
  out.boolean(v);
}
inline void put(JsonOut& out, std::string_view v) {
  out.string(v);
}
inline void put(JsonOut& out, const std::string& v) {
  out.string(v);
}
inline void put(JsonOut& out, const char* v) {
  out.string(v);
}
inline void put(JsonOut& out, double v) {
  out.number(v);
}
inline void put(JsonOut& out, std::nullptr_t) {
  out.null();
}
inline void put(JsonOut& out, const nlohmann::json& v) {
  out.value(v);
}
template <class T>
requires(std::is_integral_v<T> && !std::is_same_v<T, bool>) void put(JsonOut& out, T v) {
  if constexpr (std::is_signed_v<T>)
    out.integer(v);
  else
    out.natural(v);
}
// Absent: null, never a made-up 0 or "".
template <class T>
void put(JsonOut& out, const std::optional<T>& v) {
  if (v)
    put(out, *v);
  else
    out.null();
}
template <class T>
void put(JsonOut& out, const std::vector<T>& v) {
  out.begin_array();
  for (const auto& each : v) put(out, each);
  out.end_array();
}

// One member of an object: its key, then its value.
template <class T>
void member(JsonOut& out, std::string_view name, const T& v) {
  out.key(name);
  put(out, v);
}
// One member shown as `shown(*v)`, or null where `v` holds nothing.
template <class T, class F>
void member_shown(JsonOut& out, std::string_view name, const std::optional<T>& v, F&& shown) {
  out.key(name);
  if (v)
    put(out, shown(*v));
  else
    out.null();
}

}  // namespace gpureap::output

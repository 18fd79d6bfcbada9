#pragma once
// A JSON document as the wire decoder (wire_codec.h) reads it: parsed by nlohmann's SAX parser
// into one flat array of tokens and one buffer of their strings, not into a tree of
// nlohmann::json values. The evidence of a large node is a megabyte of wire: as a tree it costs
// a hundred thousand allocations to build and as many to free, more than the parse itself;
// the tape costs two growing buffers. Value is a read-only view of one value on the tape, with
// the questions the decoder asks of a value.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpureap::output::wire {

class Tape;

class Value {
 public:
  Value(const Tape& tape, std::uint32_t index) : tape_(&tape), index_(index) {}

  bool is_null() const;
  bool is_boolean() const;
  bool is_number() const;           // any JSON number
  bool is_number_integer() const;   // one without a fraction or exponent
  bool is_number_unsigned() const;  // ... and not negative
  bool is_string() const;
  bool is_object() const;
  bool is_array() const;

  // Each of these only for a value of its kind.
  bool boolean() const;
  std::int64_t integer() const;     // is_number_integer() and not is_number_unsigned()
  std::uint64_t unsigned_() const;  // is_number_unsigned()
  double number() const;            // is_number()
  std::string_view string() const;  // is_string()

  // An array's items or an object's keys.
  std::size_t size() const;
  // An object's value under `key` (its first, were a key given twice), or none.
  std::optional<Value> find(std::string_view key) const;

  // An array's items in order: for (Value item : value.items()).
  class Items;
  Items items() const;
  // An object's keys and values in the document's order.
  template <class F>
  void for_each_member(F&& f) const;

 private:
  friend class Tape;
  std::uint32_t next() const;  // the index of the value after this one
  const Tape* tape_;
  std::uint32_t index_;
};

class Tape {
 public:
  // Integer is a negative integer: nlohmann's parser gives every other one as Unsigned.
  enum class Kind : std::uint8_t {
    Null,
    Boolean,
    Integer,
    Unsigned,
    Float,
    String,
    Key,
    Object,
    Array
  };
  struct Text {
    std::uint32_t offset, size;  // a string's or key's bytes in the tape's strings
  };
  struct Token {
    Kind kind = Kind::Null;
    std::uint32_t count = 0;  // an array's items, an object's keys
    std::uint32_t end = 0;    // a container's: the index after its last token
    union {
      bool boolean;
      std::int64_t integer;
      std::uint64_t unsigned_;
      double number;
      Text text;
    };
  };

  // The tape of `text`, or none when it is not one JSON document.
  static std::optional<Tape> read(std::string_view text);
  // The tape of a document already parsed (tests, fuzzing, a document built in memory).
  static Tape of(const nlohmann::json& document);

  Value root() const { return Value(*this, 0); }

 private:
  friend class Value;
  class Reader;
  std::vector<Token> tokens_;
  std::string strings_;
};

class Value::Items {
 public:
  class Iterator {
   public:
    Iterator(const Tape& tape, std::uint32_t index) : value_(tape, index) {}
    Value operator*() const { return value_; }
    Iterator& operator++() {
      value_ = Value(*value_.tape_, value_.next());
      return *this;
    }
    bool operator!=(const Iterator& other) const { return value_.index_ != other.value_.index_; }

   private:
    Value value_;
  };
  Items(const Tape& tape, std::uint32_t first, std::uint32_t end)
      : tape_(tape), first_(first), end_(end) {}
  Iterator begin() const { return {tape_, first_}; }
  Iterator end() const { return {tape_, end_}; }

 private:
  const Tape& tape_;
  std::uint32_t first_, end_;
};

template <class F>
void Value::for_each_member(F&& f) const {
  const auto& token = tape_->tokens_[index_];
  for (std::uint32_t key = index_ + 1; key < token.end;) {
    const Value value(*tape_, key + 1);
    f(Value(*tape_, key).string(), value);
    key = value.next();
  }
}

}  // namespace gpureap::output::wire

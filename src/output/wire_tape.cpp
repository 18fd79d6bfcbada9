#include "output/wire_tape.h"

#include <limits>
#include <stdexcept>

namespace gpureap::output::wire {

using nlohmann::json;
using Kind = Tape::Kind;

// Builds the tape as nlohmann's SAX parser reads the text: each value's token is added where it
// starts, a container's end and count are filled in where it ends.
class Tape::Reader final : public nlohmann::json_sax<json> {
 public:
  explicit Reader(Tape& tape) : tape_(tape) {}

  bool null() override { return add(Kind::Null).has_value(); }
  bool boolean(bool v) override {
    return set(add(Kind::Boolean), [&](Token& t) { t.boolean = v; });
  }
  bool number_integer(number_integer_t v) override {
    return set(add(Kind::Integer), [&](Token& t) { t.integer = v; });
  }
  bool number_unsigned(number_unsigned_t v) override {
    return set(add(Kind::Unsigned), [&](Token& t) { t.unsigned_ = v; });
  }
  bool number_float(number_float_t v, const string_t&) override {
    return set(add(Kind::Float), [&](Token& t) { t.number = v; });
  }
  bool string(string_t& v) override { return text(Kind::String, v); }
  bool binary(binary_t&) override { return false; }  // JSON text has none
  bool key(string_t& v) override {
    // A key is counted in its object, its value is not.
    auto& object = tape_.tokens_[open_.back()];
    ++object.count;
    return text(Kind::Key, v, false);
  }
  bool start_object(std::size_t) override { return open(Kind::Object); }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(Kind::Array); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  // A token for a value, counted in its array (a key counts in its object instead); none when
  // the tape would outgrow its 32-bit indexes.
  std::optional<std::uint32_t> add(Kind kind, bool counted = true) {
    if (tape_.tokens_.size() >= std::numeric_limits<std::uint32_t>::max()) return std::nullopt;
    if (counted && !open_.empty()) {
      auto& parent = tape_.tokens_[open_.back()];
      if (parent.kind == Kind::Array) ++parent.count;
    }
    Token token;
    token.kind = kind;
    token.unsigned_ = 0;
    tape_.tokens_.push_back(token);
    return static_cast<std::uint32_t>(tape_.tokens_.size() - 1);
  }
  template <class F>
  bool set(std::optional<std::uint32_t> index, F&& f) {
    if (!index) return false;
    f(tape_.tokens_[*index]);
    return true;
  }
  bool text(Kind kind, const string_t& v, bool counted = true) {
    if (tape_.strings_.size() + v.size() > std::numeric_limits<std::uint32_t>::max()) return false;
    const auto offset = static_cast<std::uint32_t>(tape_.strings_.size());
    tape_.strings_ += v;
    return set(add(kind, counted), [&](Token& t) {
      t.text = {offset, static_cast<std::uint32_t>(v.size())};
    });
  }
  bool open(Kind kind) {
    auto index = add(kind);
    if (!index) return false;
    open_.push_back(*index);
    return true;
  }
  bool close() {
    tape_.tokens_[open_.back()].end = static_cast<std::uint32_t>(tape_.tokens_.size());
    open_.pop_back();
    return true;
  }

  Tape& tape_;
  std::vector<std::uint32_t> open_;  // the containers not yet ended, outermost first
};

std::optional<Tape> Tape::read(std::string_view text) {
  Tape tape;
  // About one token per eight bytes of wire: one allocation for most documents.
  tape.tokens_.reserve(text.size() / 8 + 1);
  tape.strings_.reserve(text.size() / 4);
  Reader reader(tape);
  if (!json::sax_parse(text.begin(), text.end(), &reader) || tape.tokens_.empty())
    return std::nullopt;
  return tape;
}

Tape Tape::of(const json& document) {
  // What dump() writes is one JSON document; it throws on a string that is not UTF-8.
  auto tape = read(document.dump());
  if (!tape) throw std::logic_error("a dumped JSON document did not parse again");
  return std::move(*tape);
}

bool Value::is_null() const {
  return tape_->tokens_[index_].kind == Kind::Null;
}
bool Value::is_boolean() const {
  return tape_->tokens_[index_].kind == Kind::Boolean;
}
bool Value::is_number() const {
  const auto k = tape_->tokens_[index_].kind;
  return k == Kind::Integer || k == Kind::Unsigned || k == Kind::Float;
}
bool Value::is_number_integer() const {
  const auto k = tape_->tokens_[index_].kind;
  return k == Kind::Integer || k == Kind::Unsigned;
}
bool Value::is_number_unsigned() const {
  return tape_->tokens_[index_].kind == Kind::Unsigned;
}
bool Value::is_string() const {
  return tape_->tokens_[index_].kind == Kind::String;
}
bool Value::is_object() const {
  return tape_->tokens_[index_].kind == Kind::Object;
}
bool Value::is_array() const {
  return tape_->tokens_[index_].kind == Kind::Array;
}

bool Value::boolean() const {
  return tape_->tokens_[index_].boolean;
}
std::int64_t Value::integer() const {
  return tape_->tokens_[index_].integer;
}
std::uint64_t Value::unsigned_() const {
  return tape_->tokens_[index_].unsigned_;
}
double Value::number() const {
  const auto& t = tape_->tokens_[index_];
  if (t.kind == Kind::Integer) return static_cast<double>(t.integer);
  if (t.kind == Kind::Unsigned) return static_cast<double>(t.unsigned_);
  return t.number;
}
std::string_view Value::string() const {
  const auto& t = tape_->tokens_[index_];
  return std::string_view(tape_->strings_).substr(t.text.offset, t.text.size);
}

std::size_t Value::size() const {
  return tape_->tokens_[index_].count;
}

std::optional<Value> Value::find(std::string_view key) const {
  const auto& object = tape_->tokens_[index_];
  for (std::uint32_t k = index_ + 1; k < object.end;) {
    const Value value(*tape_, k + 1);
    if (Value(*tape_, k).string() == key) return value;
    k = value.next();
  }
  return std::nullopt;
}

Value::Items Value::items() const {
  return Items(*tape_, index_ + 1, tape_->tokens_[index_].end);
}

std::uint32_t Value::next() const {
  const auto& t = tape_->tokens_[index_];
  return t.kind == Kind::Object || t.kind == Kind::Array ? t.end : index_ + 1;
}

}  // namespace gpureap::output::wire

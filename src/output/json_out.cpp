#include "output/json_out.h"

#include <charconv>

namespace gpureap::output {

using nlohmann::json;

namespace {

// dump_json's settings (output/snapshot_json.h): invalid UTF-8 replaced, UTF-8 kept as it is.
std::string dumped(const json& v, int indent) {
  return v.dump(indent, ' ', false, json::error_handler_t::replace);
}

template <class T>
void append_integer(std::string& out, T v) {
  char digits[24];
  auto [end, ec] = std::to_chars(digits, digits + sizeof digits, v);
  out.append(digits, end);
}

}  // namespace

// --- JsonTree ------------------------------------------------------------------------------

json& JsonTree::place(json v) {
  if (open_.empty()) {
    root_ = std::move(v);
    return root_;
  }
  json& top = *open_.back();
  if (top.is_array()) {
    top.push_back(std::move(v));
    return top.back();
  }
  json& slot = top[key_];
  slot = std::move(v);
  return slot;
}

void JsonTree::begin_object() {
  open_.push_back(&place(json::object()));
}
void JsonTree::end_object() {
  open_.pop_back();
}
void JsonTree::begin_array() {
  open_.push_back(&place(json::array()));
}
void JsonTree::end_array() {
  open_.pop_back();
}
void JsonTree::key(std::string_view name) {
  key_.assign(name);
}
void JsonTree::null() {
  place(nullptr);
}
void JsonTree::boolean(bool v) {
  place(v);
}
void JsonTree::integer(int64_t v) {
  place(v);
}
void JsonTree::natural(uint64_t v) {
  place(v);
}
void JsonTree::number(double v) {
  place(v);
}
void JsonTree::string(std::string_view v) {
  place(std::string(v));
}
void JsonTree::value(const json& v) {
  place(v);
}

// --- JsonText ------------------------------------------------------------------------------

void JsonText::next() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (members_.empty()) return;  // the document's one value
  if (members_.back()++ > 0) out_ += ',';
  if (indent_ >= 0) {
    out_ += '\n';
    out_.append(members_.size() * static_cast<size_t>(indent_), ' ');
  }
}

void JsonText::close(char bracket) {
  const size_t written = members_.back();
  members_.pop_back();
  if (written > 0 && indent_ >= 0) {
    out_ += '\n';
    out_.append(members_.size() * static_cast<size_t>(indent_), ' ');
  }
  out_ += bracket;
}

void JsonText::quoted(std::string_view v) {
  // Printable ASCII other than the quote and the backslash is written as it is; anything else
  // goes through nlohmann's writer, so escapes and replacements are exactly the tree's.
  for (char c : v) {
    if (c < 0x20 || c > 0x7e || c == '"' || c == '\\') {
      out_ += dumped(json(std::string(v)), -1);
      return;
    }
  }
  out_ += '"';
  out_ += v;
  out_ += '"';
}

void JsonText::begin_object() {
  next();
  out_ += '{';
  members_.push_back(0);
}
void JsonText::end_object() {
  close('}');
}
void JsonText::begin_array() {
  next();
  out_ += '[';
  members_.push_back(0);
}
void JsonText::end_array() {
  close(']');
}
void JsonText::key(std::string_view name) {
  next();
  quoted(name);
  out_ += indent_ >= 0 ? ": " : ":";
  after_key_ = true;
}
void JsonText::null() {
  next();
  out_ += "null";
}
void JsonText::boolean(bool v) {
  next();
  out_ += v ? "true" : "false";
}
void JsonText::integer(int64_t v) {
  next();
  append_integer(out_, v);
}
void JsonText::natural(uint64_t v) {
  next();
  append_integer(out_, v);
}
void JsonText::number(double v) {
  next();
  out_ += dumped(json(v), -1);  // nlohmann's shortest form, and null for NaN and infinities
}
void JsonText::string(std::string_view v) {
  next();
  quoted(v);
}
void JsonText::value(const json& v) {
  next();
  const std::string text = dumped(v, indent_);
  if (indent_ < 0) {
    out_ += text;
    return;
  }
  // Indented as deep as it is written: a line break in the text is always the layout's (one in
  // a string is escaped).
  const std::string pad(members_.size() * static_cast<size_t>(indent_), ' ');
  for (char c : text) {
    out_ += c;
    if (c == '\n') out_ += pad;
  }
}

}  // namespace gpureap::output

#include "tui/frame.h"

#include "text/display_width.h"

namespace gpureap::tui {

using text::columns;
using text::text_width;

Line& Line::add(std::string text, Role role) {
  if (!text.empty()) spans.push_back({std::move(text), role});
  return *this;
}

Line& Line::reversed() {
  for (auto& s : spans) s.reverse = true;
  return *this;
}

size_t Line::width() const {
  size_t w = 0;
  for (const auto& s : spans) w += text_width(s.text);
  return w;
}

std::string Line::text() const {
  std::string out;
  for (const auto& s : spans) out += s.text;
  return out;
}

std::string Frame::text() const {
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) out += (i ? "\n" : "") + lines[i].text();
  return out;
}

Line slice(const Line& line, size_t from, size_t to) {
  Line out;
  size_t col = 0;
  for (const auto& s : line.spans) {
    size_t w = text_width(s.text);
    size_t a = std::max(col, from), b = std::min(col + w, to);
    if (a < b) out.spans.push_back({columns(s.text, a - col, b - col), s.role, s.reverse});
    col += w;
    if (col >= to) break;
  }
  return out;
}

Line fit_line(const Line& line, size_t width) {
  return line.width() <= width ? line : slice(line, 0, width);
}

Line pad_line(const Line& line, size_t width) {
  Line out = fit_line(line, width);
  size_t w = out.width();
  if (w < width) {
    Span pad{std::string(width - w, ' ')};
    if (!out.spans.empty())
      pad.role = out.spans.back().role, pad.reverse = out.spans.back().reverse;
    out.spans.push_back(std::move(pad));
  }
  return out;
}

void overlay(Frame& frame, size_t x, size_t y, const std::vector<Line>& box) {
  for (size_t i = 0; i < box.size() && y + i < frame.height; ++i) {
    while (frame.lines.size() <= y + i) frame.lines.emplace_back();
    Line& base = frame.lines[y + i];
    const Line& top = box[i];
    size_t w = top.width();
    Line merged = pad_line(slice(base, 0, x), x);
    for (const auto& s : top.spans) merged.spans.push_back(s);
    if (base.width() > x + w) {
      Line rest = slice(base, x + w, base.width());
      for (auto& s : rest.spans) merged.spans.push_back(std::move(s));
    }
    base = fit_line(merged, frame.width);
  }
}

const Glyphs& glyphs(bool unicode) {
  static const Glyphs u{
      "█", "▒", "▓", "░", "├─", "└─", "│ ", "  ", {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"},
      "…", "─", "│", "┌", "┐",  "└",  "┘",  "▲",  "▼",
      "·"};
  static const Glyphs a{
      "#", "!", "%", ".", "|-", "`-", "| ", "  ", {"_", ".", "-", "-", "=", "=", "#", "#"},
      "~", "-", "|", "+", "+",  "+",  "+",  "^",  "v",
      "-"};
  return unicode ? u : a;
}

}  // namespace gpureap::tui

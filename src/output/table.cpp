#include "output/table.h"

#include <algorithm>

namespace gpureap::output {
namespace {

std::string cut(const std::string& s, size_t width) {
  if (display_width(s) <= width) return s;
  std::string out;
  size_t w = 0;
  for (size_t i = 0; i < s.size() && w + 1 < width; ++i) {
    out += s[i];
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) ++w;
    while (i + 1 < s.size() && (static_cast<unsigned char>(s[i + 1]) & 0xC0) == 0x80) out += s[++i];
  }
  return out + "…";
}

}  // namespace

size_t display_width(const std::string& s) {
  return static_cast<size_t>(std::count_if(
      s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

std::string Table::render(const Style& style, std::optional<size_t> max_width) const {
  std::vector<size_t> widths(headers_.size());
  for (size_t c = 0; c < headers_.size(); ++c) widths[c] = display_width(headers_[c]);
  for (const auto& r : rows_)
    for (size_t c = 0; c < r.size() && c < widths.size(); ++c)
      widths[c] = std::max(widths[c], display_width(r[c].text));
  auto line = [&](const std::vector<Cell>& cells) {
    std::string out;
    size_t used = 0;
    for (size_t c = 0; c < cells.size() && c < widths.size(); ++c) {
      bool last = c + 1 == cells.size() || c + 1 == widths.size();
      std::string text = cells[c].text;
      if (last && max_width && *max_width > used + 8) text = cut(text, *max_width - used);
      if (!last) text += std::string(widths[c] - display_width(text) + 2, ' ');
      used += widths[c] + 2;
      out += style.paint(text, cells[c].color);
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::vector<Cell> head;
  for (const auto& h : headers_) head.push_back({h, Color::Bold});
  std::string out = line(head);
  for (const auto& r : rows_) out += line(r);
  return out;
}

}  // namespace gpureap::output

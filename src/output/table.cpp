#include "output/table.h"

#include <algorithm>

#include "text/display_width.h"

namespace gpureap::output {

std::string Table::render(const Style& style, std::optional<size_t> max_width) const {
  const size_t n = headers_.size();
  if (n == 0) return "";
  std::vector<size_t> widths(n);
  for (size_t c = 0; c < n; ++c) widths[c] = text::text_width(headers_[c]);
  for (const auto& r : rows_)
    for (size_t c = 0; !r.note_column && c < r.cells.size() && c < n; ++c)
      widths[c] = std::max(widths[c], text::text_width(r.cells[c].text));
  std::vector<bool> shown(n, true);
  auto before_last = [&] {
    size_t sum = 0;
    for (size_t c = 0; c + 1 < n; ++c)
      if (shown[c]) sum += widths[c] + 2;
    return sum;
  };
  if (max_width) {
    size_t natural = before_last() + widths[n - 1];
    for (const auto& h : droppable_) {
      if (natural <= *max_width || before_last() + last_keeps_ <= *max_width) break;
      auto it = std::find(headers_.begin(), headers_.end(), h);
      if (it == headers_.end() || it + 1 == headers_.end()) continue;
      shown[static_cast<size_t>(it - headers_.begin())] = false;
      natural = before_last() + widths[n - 1];
    }
  }
  auto cut = [&](const std::string& s, size_t used) {
    if (!max_width) return s;
    return text::fit(s, *max_width > used ? *max_width - used : 0, ellipsis_);
  };
  auto line = [&](const std::vector<Cell>& cells) {
    std::string out;
    size_t used = 0;
    for (size_t c = 0; c < cells.size() && c < n; ++c) {
      if (!shown[c]) continue;
      bool last = c + 1 == cells.size() || c + 1 == n;
      std::string text = cells[c].text;
      if (last) {
        text = cut(text, used);
      } else {
        text += std::string(widths[c] - text::text_width(text) + 2, ' ');
        used += widths[c] + 2;
      }
      out += style.paint(text, cells[c].color);
      if (max_width && used >= *max_width) break;
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  auto note = [&](const Row& r) {
    size_t indent = 0;
    for (size_t c = 0; c < *r.note_column && c + 1 < n; ++c)
      if (shown[c]) indent += widths[c] + 2;
    const Cell& cell = r.cells.front();
    return std::string(indent, ' ') + style.paint(cut(cell.text, indent), cell.color) + "\n";
  };
  std::vector<Cell> head;
  for (const auto& h : headers_) head.push_back({h, Color::Bold});
  std::string out = line(head);
  for (const auto& r : rows_) out += r.note_column ? note(r) : line(r.cells);
  return out;
}

}  // namespace gpureap::output

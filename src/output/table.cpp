#include "output/table.h"

#include <algorithm>

#include "text/display_width.h"

namespace gpureap::output {

std::string Table::render(const Style& style, std::optional<size_t> max_width) const {
  std::vector<size_t> widths(headers_.size());
  for (size_t c = 0; c < headers_.size(); ++c) widths[c] = text::text_width(headers_[c]);
  for (const auto& r : rows_)
    for (size_t c = 0; c < r.size() && c < widths.size(); ++c)
      widths[c] = std::max(widths[c], text::text_width(r[c].text));
  auto line = [&](const std::vector<Cell>& cells) {
    std::string out;
    size_t used = 0;
    for (size_t c = 0; c < cells.size() && c < widths.size(); ++c) {
      bool last = c + 1 == cells.size() || c + 1 == widths.size();
      std::string shown = cells[c].text;
      if (last && max_width && *max_width > used + 8) shown = text::fit(shown, *max_width - used);
      if (!last) shown += std::string(widths[c] - text::text_width(shown) + 2, ' ');
      used += widths[c] + 2;
      out += style.paint(shown, cells[c].color);
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

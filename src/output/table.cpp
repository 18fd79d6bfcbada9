#include "output/table.h"

#include <algorithm>

#include "text/display_width.h"
#include "text/wrap.h"

namespace gpureap::output {
namespace {

std::vector<std::string> wrap_lines(std::string_view text, std::optional<size_t> width) {
  std::vector<std::string> out;
  for (size_t i = 0; i <= text.size();) {
    size_t end = std::min(text.find('\n', i), text.size());
    std::string_view paragraph = text.substr(i, end - i);
    if (!width || text::text_width(paragraph) <= *width) {
      out.emplace_back(paragraph);
    } else {
      for (auto& l : text::wrap(paragraph, std::max<size_t>(*width, 1)))
        out.push_back(std::move(l));
    }
    i = end + 1;
    if (end == text.size()) break;
  }
  return out;
}

}  // namespace

std::optional<size_t> fit_width(std::optional<size_t> terminal, const char* columns) {
  if (terminal) return terminal;
  if (!columns || !*columns) return std::nullopt;
  size_t n = 0;
  for (const char* c = columns; *c; ++c) {
    if (*c < '0' || *c > '9' || n > 100'000) return std::nullopt;
    n = n * 10 + static_cast<size_t>(*c - '0');
  }
  if (n == 0) return std::nullopt;
  return n;
}

std::string wrap_text(std::string_view text, std::optional<size_t> width) {
  if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  std::string out;
  for (const auto& l : wrap_lines(text, width)) out += l + "\n";
  return out;
}

std::string Table::render(const Style& style, std::optional<size_t> max_width) const {
  const size_t n = headers_.size();
  if (n == 0) return "";
  std::vector<size_t> widths(n);
  for (size_t c = 0; c < n; ++c) widths[c] = text::text_width(headers_[c]);
  for (const auto& r : rows_)
    for (size_t c = 0; !r.note_column && c < r.cells.size() && c < n; ++c)
      widths[c] = std::max(widths[c], text::text_width(r.cells[c].text));
  std::vector<bool> shown(n, true);
  std::vector<std::string> folded(n);  // the label of a folded column
  auto before_last = [&] {
    size_t sum = 0;
    for (size_t c = 0; c + 1 < n; ++c)
      if (shown[c]) sum += widths[c] + 2;
    return sum;
  };
  // The last column has what it must keep (or all it needs).
  auto fits = [&] { return before_last() + std::min(widths[n - 1], last_keeps_) <= *max_width; };
  if (max_width) {
    for (const auto& step : steps_) {
      if (fits()) break;
      auto it = std::find(headers_.begin(), headers_.end(), step.header);
      if (it == headers_.end() || it + 1 == headers_.end()) continue;
      auto c = static_cast<size_t>(it - headers_.begin());
      switch (step.kind) {
        case Step::Drop:
          shown[c] = false;
          break;
        case Step::Fold:
          shown[c] = false;
          folded[c] = step.label;
          break;
        case Step::Shrink: {
          size_t excess = before_last() + std::min(widths[n - 1], last_keeps_) - *max_width;
          size_t least = std::max(step.least, text::text_width(headers_[c]));
          if (widths[c] > least) widths[c] -= std::min(excess, widths[c] - least);
          break;
        }
      }
    }
  }
  auto line = [&](const std::vector<Cell>& cells) {
    std::string out;
    size_t used = 0;
    for (size_t c = 0; c < cells.size() && c < n; ++c) {
      if (!shown[c]) continue;
      bool last = c + 1 == cells.size() || c + 1 == n;
      std::string text = cells[c].text;
      if (last) {
        if (max_width) text = text::fit(text, *max_width > used ? *max_width - used : 0, ellipsis_);
      } else if (max_width && used + widths[c] > *max_width) {
        // The last resort when even the narrowest table is too wide: the line ends here.
        out += style.paint(text::fit(text, *max_width - used, ellipsis_), cells[c].color);
        break;
      } else {
        text = text::pad_right(text, widths[c], ellipsis_) + "  ";
        used += widths[c] + 2;
      }
      out += style.paint(text, cells[c].color);
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out;
  };
  // Wrapped lines, each indented by `indent` columns (none when the terminal is narrower).
  auto indented = [&](const std::string& text, size_t indent, Color color) {
    if (max_width && indent + 10 > *max_width) indent = 0;
    std::optional<size_t> room;
    if (max_width) room = *max_width - indent;
    std::string out;
    for (const auto& l : wrap_lines(text, room))
      out += std::string(indent, ' ') + style.paint(l, color) + "\n";
    return out;
  };
  // A folded cell goes under the second column: the row's first cell (its PID) stays clear.
  size_t fold_indent = shown[0] && n > 1 ? widths[0] + 2 : 0;
  std::string out;
  auto emit = [&](const std::string& l) { out += l + "\n"; };
  std::vector<Cell> head;
  for (const auto& h : headers_) head.push_back({h, Color::Bold});
  emit(line(head));
  for (const auto& r : rows_) {
    if (r.note_column) {
      size_t indent = 0;
      for (size_t c = 0; c < *r.note_column && c + 1 < n; ++c)
        if (shown[c]) indent += widths[c] + 2;
      const Cell& cell = r.cells.front();
      out += indented(cell.text, indent, cell.color);
      continue;
    }
    emit(line(r.cells));
    for (size_t c = 0; c < n && c < r.cells.size(); ++c)
      if (!folded[c].empty() && !r.cells[c].text.empty())
        out += indented(folded[c] + ": " + r.cells[c].text, fold_indent, r.cells[c].color);
  }
  return out;
}

}  // namespace gpureap::output

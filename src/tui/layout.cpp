#include "tui/layout.h"

#include <algorithm>

#include "text/display_width.h"

namespace gpureap::tui {

using text::text_width;

ScreenLayout layout_screen(size_t width, size_t height, size_t gpus, bool detail_open) {
  ScreenLayout l;
  l.width = width;
  l.height = height;
  if (width < kMinWidth || height < kMinHeight) {
    l.too_small = true;
    return l;
  }
  // Fixed lines: title, host, status, column titles, footer; the GPUs get up to a third of
  // what is left, so the table keeps most of a small screen.
  size_t fixed = 5;
  size_t max_gpu = std::max<size_t>(1, (height - fixed) / 3);
  if (gpus == 0) {
    l.gpu_lines = 1;
  } else if (gpus <= max_gpu) {
    l.gpu_lines = gpus;
  } else {
    l.gpu_lines = std::max<size_t>(1, max_gpu - 1);
    l.more_gpus = true;
  }
  size_t gpu_block = l.gpu_lines + (l.more_gpus ? 1 : 0);
  l.title_y = 0;
  l.gpu_y = 1;
  l.host_y = l.gpu_y + gpu_block;
  l.status_y = l.host_y + 1;
  l.header_y = l.status_y + 1;
  l.table_y = l.header_y + 1;
  l.footer_y = height - 1;
  size_t body = l.footer_y - l.table_y;
  if (detail_open) {
    // A small screen keeps a few table rows above the pane; a big one shares it.
    size_t table = height >= 40 ? body - body * 9 / 20 : std::max<size_t>(3, body / 3);
    table = std::min(table, body > 3 ? body - 3 : 0);
    l.table_rows = table;
    l.detail_y = l.table_y + table;
    l.detail_rows = body - table;
  } else {
    l.table_rows = body;
  }
  return l;
}

std::vector<ColumnSpec> layout_columns(size_t width, const TableNeeds& n) {
  size_t user = std::clamp<size_t>(n.user, 4, 12);
  size_t gpu = std::clamp<size_t>(n.gpu, 3, 7);
  size_t anomalies = std::clamp<size_t>(n.anomalies, 9, 34);
  // SM% takes four columns: its title and the sort arrow stay whole when it is sorted on.
  std::vector<ColumnSpec> cols = {
      {Column::Pid, 7, true},    {Column::User, user},    {Column::Gpu, gpu},
      {Column::Memory, 9, true}, {Column::Sm, 4, true},   {Column::Cpu, 5, true},
      {Column::Rss, 5, true},    {Column::Time, 8, true}, {Column::State, 10},
      {Column::Age, 6, true},    {Column::Container, 19}, {Column::Anomalies, anomalies},
      {Column::Command, 0}};
  if (!n.containers)
    std::erase_if(cols, [](const ColumnSpec& c) { return c.column == Column::Container; });
  auto used = [&] {
    size_t sum = kMarkWidth;
    for (const auto& c : cols)
      if (c.column != Column::Command) sum += c.width + 1;
    return sum;
  };
  auto room = [&] { return width > used() ? width - used() : 0; };
  auto shrink = [&](Column col, size_t to) {
    for (auto& c : cols)
      if (c.column == col && c.width > to) {
        size_t need = kMinCommandWidth > room() ? kMinCommandWidth - room() : 0;
        c.width -= std::min(need, c.width - to);
      }
  };
  // Least useful first: the command must stay readable.
  for (Column drop :
       {Column::Container, Column::Time, Column::Rss, Column::Cpu, Column::Sm, Column::Age}) {
    if (room() >= kMinCommandWidth) break;
    std::erase_if(cols, [drop](const ColumnSpec& c) { return c.column == drop; });
  }
  shrink(Column::Anomalies, 16);
  shrink(Column::State, 8);
  shrink(Column::User, 6);
  shrink(Column::Anomalies, 9);
  cols.back().width = room();
  return cols;
}

TableNeeds needs_of(const std::vector<ViewRow>& rows) {
  TableNeeds n;
  for (const auto& v : rows) {
    n.user = std::max(n.user, text_width(v.row.user));
    n.gpu = std::max(n.gpu, text_width(v.row.gpu_text()));
    n.anomalies = std::max(n.anomalies, text_width(v.row.anomalies));
    if (v.row.container != "-") n.containers = true;
  }
  return n;
}

Box center_box(size_t sw, size_t sh, size_t cw, size_t ch) {
  Box b;
  b.width = std::min(cw + 4, sw > 2 ? sw - 2 : sw);
  b.height = std::min(ch + 2, sh > 2 ? sh - 2 : sh);
  b.x = (sw - b.width) / 2;
  b.y = (sh - b.height) / 2;
  return b;
}

}  // namespace gpureap::tui

#pragma once
// A plain text table: columns sized to their widest cell in display columns (text::text_width:
// a CJK character takes two, a combining mark none), so wide names keep the columns aligned.
// Given the terminal's width, the last column is cut to fit (with an ellipsis), and columns
// named droppable go, least useful first, until the last one keeps a readable width: nothing
// wraps. Without a width (not a terminal) nothing is cut. Cells are already terminal-safe;
// colour is applied after padding.
#include <optional>
#include <string>
#include <vector>

#include "output/style.h"

namespace gpureap::output {

struct Cell {
  std::string text;
  Color color = Color::None;
};

class Table {
 public:
  explicit Table(std::vector<std::string> headers) : headers_(std::move(headers)) {}
  void add(std::vector<Cell> row) { rows_.push_back({std::move(row), std::nullopt}); }
  // A line under the row added last, starting under column `column` and taking no part in
  // the columns' widths (a GPU's memory split); cut at the terminal's edge.
  void add_note(size_t column, Cell cell) { rows_.push_back({{std::move(cell)}, column}); }
  bool empty() const { return rows_.empty(); }
  // Headers of the columns that may go when the terminal is narrow, the first to go first,
  // and the width the last column must keep before that happens.
  void drop_when_narrow(std::vector<std::string> headers, size_t last_keeps) {
    droppable_ = std::move(headers);
    last_keeps_ = last_keeps;
  }
  void set_ellipsis(std::string ellipsis) { ellipsis_ = std::move(ellipsis); }
  std::string render(const Style& style, std::optional<size_t> max_width) const;

 private:
  struct Row {
    std::vector<Cell> cells;
    std::optional<size_t> note_column;  // set: a note, one cell
  };
  std::vector<std::string> headers_;
  std::vector<Row> rows_;
  std::vector<std::string> droppable_;
  size_t last_keeps_ = 8;
  std::string ellipsis_ = "…";
};

}  // namespace gpureap::output

#pragma once
// A plain text table: columns sized to their widest cell in display columns (text::text_width:
// a CJK character takes two, a combining mark none), so wide names keep the columns aligned.
// Given the terminal's width, every line fits it: the table narrows step by step, in the order
// the caller gave, until the last column keeps a readable width: a column is dropped (it is
// told better elsewhere), folded (its cell becomes a line under its row, "why: ..."), or
// shrunk (its cells cut with an ellipsis, down to a least width). The last column is then cut
// to fit; notes and folded cells wrap at word boundaries. Nothing wraps mid-word; without a
// width (not a terminal) nothing is cut or wrapped. Cells are already terminal-safe; colour is
// applied after padding.
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
  // the columns' widths (a GPU's memory split); wrapped at the terminal's edge.
  void add_note(size_t column, Cell cell) { rows_.push_back({{std::move(cell)}, column}); }
  bool empty() const { return rows_.empty(); }
  // Headers of the columns that may go when the terminal is narrow, the first to go first,
  // and the width the last column must keep before that happens.
  void drop_when_narrow(std::vector<std::string> headers, size_t last_keeps) {
    for (auto& h : headers) steps_.push_back({Step::Drop, std::move(h), 0});
    last_keeps_ = last_keeps;
  }
  // Then: this column leaves the table for a line under each row, "label: text", indented
  // under the second column.
  void fold_when_narrow(std::string header, std::string label) {
    steps_.push_back({Step::Fold, std::move(header), 0, std::move(label)});
  }
  // Then: this column's cells are cut (with the ellipsis) down to `least` columns.
  void shrink_when_narrow(std::string header, size_t least) {
    steps_.push_back({Step::Shrink, std::move(header), least});
  }
  void set_ellipsis(std::string ellipsis) { ellipsis_ = std::move(ellipsis); }
  std::string render(const Style& style, std::optional<size_t> max_width) const;

 private:
  struct Row {
    std::vector<Cell> cells;
    std::optional<size_t> note_column;  // set: a note, one cell
  };
  struct Step {
    enum Kind { Drop, Fold, Shrink } kind;
    std::string header;
    size_t least = 0;
    std::string label;
  };
  std::vector<std::string> headers_;
  std::vector<Row> rows_;
  std::vector<Step> steps_;
  size_t last_keeps_ = 8;
  std::string ellipsis_ = "…";
};

// The width output is fitted to: the terminal's, else COLUMNS when it is a positive number (as
// ps(1) reads it: `COLUMNS=80 gpureap ps | less`); none: nothing is cut or wrapped.
std::optional<size_t> fit_width(std::optional<size_t> terminal, const char* columns);

// `text` wrapped at word boundaries to `width` columns, each line ending in a newline; a word
// in backquotes (a command to run) is kept whole when it fits a line. Without a width, one line.
std::string wrap_text(std::string_view text, std::optional<size_t> width);

}  // namespace gpureap::output

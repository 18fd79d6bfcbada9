#pragma once
// A plain text table: columns sized to their widest cell in display columns (text::text_width:
// a CJK character takes two, a combining mark none), so wide names keep the columns aligned; the
// last column may be cut to fit the terminal. Cells are already terminal-safe; colour is applied
// after padding.
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
  void add(std::vector<Cell> row) { rows_.push_back(std::move(row)); }
  bool empty() const { return rows_.empty(); }
  std::string render(const Style& style, std::optional<size_t> max_width) const;

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<Cell>> rows_;
};

}  // namespace gpureap::output

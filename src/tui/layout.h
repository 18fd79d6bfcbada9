#pragma once
// Where everything goes on a screen of a given size, and which table columns fit. Pure: the
// same numbers at 80x24 over ssh and at 200x60, tested without a terminal.
#include <cstddef>
#include <vector>

#include "tui/view.h"

namespace gpureap::tui {

inline constexpr size_t kMinWidth = 40;
inline constexpr size_t kMinHeight = 8;

struct ScreenLayout {
  size_t width = 0, height = 0;
  bool too_small = false;  // below kMinWidth x kMinHeight: only a message is drawn
  size_t title_y = 0;
  size_t gpu_y = 1;
  size_t gpu_lines = 0;    // one GPU each
  bool more_gpus = false;  // a "+N more GPUs" line follows them
  size_t host_y = 0;
  size_t status_y = 0;
  size_t header_y = 0;  // column titles
  size_t table_y = 0;
  size_t table_rows = 0;
  size_t detail_y = 0;  // the detail pane, when open (its first line is a title bar)
  size_t detail_rows = 0;
  size_t footer_y = 0;
};

// `gpus`: how many GPUs the header shows lines for (0: one line about the driver).
ScreenLayout layout_screen(size_t width, size_t height, size_t gpus, bool detail_open);

struct TableNeeds {
  size_t user = 4;          // widest user name
  size_t gpu = 3;           // widest GPU list
  size_t anomalies = 9;     // widest anomaly list
  bool containers = false;  // some row runs in a container
};

struct ColumnSpec {
  Column column;
  size_t width = 0;
  bool right = false;  // numbers are right-aligned
};

inline constexpr size_t kMarkWidth = 1;  // the tag mark before each row
// What the command column keeps before a column gives way: a program and its script.
inline constexpr size_t kMinCommandWidth = 24;

// The columns that fit in `width`, separated by one space after the mark column. The command
// takes what is left; less useful columns go first when it would get too little.
std::vector<ColumnSpec> layout_columns(size_t width, const TableNeeds& needs);
TableNeeds needs_of(const std::vector<ViewRow>& rows);

// Where a dialog box of content width x height goes, centred and clamped to the screen.
struct Box {
  size_t x = 0, y = 0, width = 0, height = 0;
};
Box center_box(size_t screen_width, size_t screen_height, size_t content_width,
               size_t content_height);

}  // namespace gpureap::tui

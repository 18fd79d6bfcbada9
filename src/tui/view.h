#pragma once
// What the process table shows: the rows that pass the filter, in the chosen order, flat or
// as a tree (holders under their parents; the workers that keep a gone PID's memory alive
// under that PID). Pure over one snapshot.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/snapshot.h"
#include "tui/rows.h"

namespace gpureap::tui {

enum class Column {
  Pid,
  User,
  Gpu,
  Memory,
  Sm,
  Cpu,
  Rss,
  Time,
  State,
  Age,
  Container,
  Anomalies,
  Command
};
inline constexpr Column kAllColumns[] = {
    Column::Pid,       Column::User,      Column::Gpu,    Column::Memory, Column::Sm,
    Column::Cpu,       Column::Rss,       Column::Time,   Column::State,  Column::Age,
    Column::Container, Column::Anomalies, Column::Command};

std::string_view column_title(Column c);
// The key that sorts by a column: P U G M % X R T S A O N C.
char sort_key(Column c);
// Numbers and anomalies sort largest first when chosen; text and PIDs A to Z.
bool descending_by_default(Column c);

struct Sort {
  Column column = Column::Memory;
  bool descending = true;
};

struct Filter {
  std::string
      text;  // case-insensitive substring of pid, user, state, command, container, anomalies
  std::optional<unsigned> gpu;
  std::optional<std::string> user;
  bool anomalies_only = false;

  bool active() const { return !text.empty() || gpu || user || anomalies_only; }
};

bool matches(const TopRow& row, const Filter& filter);
// Strict weak order for `sort`; ties go by PID.
bool sorts_before(const TopRow& a, const TopRow& b, const Sort& sort);

struct ViewRow {
  TopRow row;
  int depth = 0;
  std::string prefix;  // tree drawing before the command
};

struct ViewOptions {
  Filter filter;
  Sort sort;
  bool tree = false;
  bool unicode = true;  // tree glyphs
};

std::vector<ViewRow> make_view(const core::Snapshot& s, const Viewer& viewer,
                               const ViewOptions& options);
// make_view over rows already built (the snapshot is still needed for the tree's ancestors).
std::vector<ViewRow> make_view(const core::Snapshot& s, const std::vector<TopRow>& rows,
                               const Viewer& viewer, const ViewOptions& options);

// The users and GPUs present in the rows, for the filters that cycle through them.
std::vector<std::string> users_of(const std::vector<TopRow>& rows);
std::vector<unsigned> gpus_of(const core::Snapshot& s, const std::vector<TopRow>& rows);

}  // namespace gpureap::tui

// `ps --tree`'s shape (src/output/ps_tree.cpp): the ancestors it draws for context, and how
// many columns its branches take, whatever the depth of the session the job runs in.
#include <gtest/gtest.h>

#include "output/ps_tree.h"
#include "snapshot_builders.h"

namespace gpureap::output {
namespace {

using namespace gpureap::testing;

std::vector<pid_t> pids_of(const std::vector<TreeLine>& lines) {
  std::vector<pid_t> out;
  for (const auto& l : lines) out.push_back(l.pid);
  return out;
}

const TreeLine* line_of(const std::vector<TreeLine>& lines, pid_t pid) {
  for (const auto& l : lines)
    if (l.pid == pid) return &l;
  return nullptr;
}

// A job two levels under a chain of `depth` shells, each the only child of the one above.
core::Snapshot deep_session(int depth) {
  std::vector<core::HostProcess> ps{proc(1, 0, 1)};
  pid_t parent = 1;
  for (int i = 0; i < depth; ++i) {
    pid_t pid = 1000000 + i;
    ps.push_back(proc(pid, parent, pid));
    parent = pid;
  }
  ps.push_back(holder(2000001, parent, 2000001));
  ps.push_back(holder(2000002, parent, 2000002));
  return make_snapshot(ps,
                       {gpu(0, 0, 8 * GiB, {listed(2000001, 4 * GiB), listed(2000002, 4 * GiB)})});
}

TEST(PsTree, AChainOfAncestorsIsDrawnByTheOneAboveTheRows) {
  for (int depth : {1, 3, 12}) {
    auto lines = tree_lines(deep_session(depth), tree_glyphs(true));
    // The job's parent, then its two rows: the shells above it are left out.
    const pid_t parent = 1000000 + depth - 1;
    EXPECT_EQ(pids_of(lines), (std::vector<pid_t>{parent, 2000001, 2000002})) << depth;
    ASSERT_NE(line_of(lines, 2000002), nullptr);
    EXPECT_EQ(line_of(lines, parent)->prefix, "");
    EXPECT_EQ(line_of(lines, 2000001)->prefix, "├ ");
    EXPECT_EQ(line_of(lines, 2000002)->prefix, "└ ");
  }
}

TEST(PsTree, AncestorsAtABranchOrAboveARowStay) {
  // 10 → 11 (row) → 12 → {20 → 21 → 30 (row), 40 (row)}. 10 is right above a row and 12
  // branches: they stay. 20's one child is no row: 20 goes, 21 stands for it.
  auto s =
      make_snapshot({proc(1, 0, 1), proc(10, 1, 10), holder(11, 10, 10), proc(12, 11, 10),
                     proc(20, 12, 10), proc(21, 20, 10), holder(30, 21, 10), holder(40, 12, 10)},
                    {gpu(0, 0, 3 * GiB, {listed(11, GiB), listed(30, GiB), listed(40, GiB)})});
  auto lines = tree_lines(s, tree_glyphs(false));
  EXPECT_EQ(pids_of(lines), (std::vector<pid_t>{10, 11, 12, 21, 30, 40}));
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_EQ(line_of(lines, 12)->prefix, "  ` ");
  EXPECT_EQ(line_of(lines, 21)->prefix, "    | ");
  EXPECT_EQ(line_of(lines, 30)->prefix, "    | ` ");
  EXPECT_EQ(line_of(lines, 40)->prefix, "    ` ");
}

}  // namespace
}  // namespace gpureap::output

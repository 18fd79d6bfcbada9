#pragma once
// The order and branch drawing of `ps --tree`, the same tree `top` draws: the rows, each gone
// PID above the live processes that keep its memory, and the ancestors (but init) of the rest
// for context. A chain of ancestors that each have one child and are no row is drawn by its
// last alone (the one above the rows or a branch), so the tree is as deep as the rows need,
// not as deep as the session they run in. Siblings are drawn ├ and the last └, with │ down past
// a sibling's subtree.
#include <sys/types.h>

#include <string>
#include <vector>

#include "core/snapshot.h"

namespace gpureap::output {

struct TreeGlyphs {
  std::string branch, last, pipe, space;  // "├", "└", "│", " "
};
TreeGlyphs tree_glyphs(bool unicode);

struct TreeLine {
  pid_t pid = 0;
  std::string prefix;  // the branch drawing before the PID
};

std::vector<TreeLine> tree_lines(const core::Snapshot& snapshot, const TreeGlyphs& glyphs);

}  // namespace gpureap::output

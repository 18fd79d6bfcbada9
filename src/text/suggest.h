#pragma once
// "Did you mean …": the word a user most likely meant when what they typed names nothing (a
// mistyped option or subcommand), by edit distance, as git and cargo suggest.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpureap::text {

// Edits that turn `a` into `b`: insertions, deletions, substitutions, and swaps of two
// neighbouring characters ("--tere" is one edit from "--tree"), each counting one.
size_t edit_distance(std::string_view a, std::string_view b);

// The candidate `typed` is most likely a typo of: the closest by edit_distance when it is close
// for its length (1 edit for up to 4 letters, 2 up to 8, 3 beyond; leading dashes not counted),
// else the one candidate that `typed` (3 letters or more) begins. Ties go to the first listed.
// None when nothing is close, or `typed` is itself a candidate.
std::optional<std::string> closest_match(std::string_view typed,
                                         const std::vector<std::string>& candidates);

}  // namespace gpureap::text

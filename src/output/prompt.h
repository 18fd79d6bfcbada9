#pragma once
// The y/N question asked before a destructive action (kill, doctor --fix, reset). One rule for
// every command: "y", "Y" and "yes" go ahead; anything else, an empty line or no line at all
// (end of input) is no. Other spellings ("YES", "Yes", "yep") are no, so an answer is never
// guessed into a kill.
#include <istream>
#include <ostream>
#include <string>
#include <string_view>

namespace gpureap::output {

bool is_yes(std::string_view answer);

// Writes "<question> [y/N] " to `out`, reads one line from `in`.
bool ask_yes_no(const std::string& question, std::istream& in, std::ostream& out);

}  // namespace gpureap::output

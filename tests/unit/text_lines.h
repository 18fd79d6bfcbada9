#pragma once
// The lines of a screen or a report as the tests compare them.
#include <sstream>
#include <string>
#include <vector>

namespace gpureap::testing {

// `text` split at its newlines, without them; a last line without a newline is kept.
inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace gpureap::testing

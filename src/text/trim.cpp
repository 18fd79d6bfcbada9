#include "text/trim.h"

namespace gpureap::text {

std::string_view trim(std::string_view s, std::string_view blanks) {
  size_t first = s.find_first_not_of(blanks);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(blanks) - first + 1);
}

}  // namespace gpureap::text

#include "text/plural.h"

#include <cstring>

namespace gpureap::text {

std::string plural(size_t n, std::string_view noun) {
  std::string word(noun);
  if (n != 1 && !word.empty()) {
    if (word.back() == 's')
      word += "es";
    else if (word.back() == 'y' && word.size() > 1 && !std::strchr("aeiou", word[word.size() - 2]))
      word.back() = 'i', word += "es";  // policy → policies
    else
      word += "s";
  }
  return std::to_string(n) + " " + word;
}

}  // namespace gpureap::text

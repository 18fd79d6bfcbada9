#include "output/prompt.h"

namespace gpureap::output {

bool is_yes(std::string_view answer) {
  return answer == "y" || answer == "Y" || answer == "yes";
}

bool ask_yes_no(const std::string& question, std::istream& in, std::ostream& out) {
  out << question << " [y/N] " << std::flush;
  std::string answer;
  if (!std::getline(in, answer)) return false;
  return is_yes(answer);
}

}  // namespace gpureap::output

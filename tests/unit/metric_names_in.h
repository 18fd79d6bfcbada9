#pragma once
// The gpureap metric names a text mentions (a PromQL query, an alert rule, a dashboard's
// expression), for the tests that hold those readers to what the exporter writes.
#include <regex>
#include <set>
#include <string>

namespace gpureap::testing {

inline std::set<std::string> gpureap_names_in(const std::string& text) {
  std::set<std::string> names;
  static const std::regex re(R"(gpureap_[a-z_]+)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator();
       ++it)
    names.insert(it->str());
  return names;
}

}  // namespace gpureap::testing

#include "export/bearer_auth.h"

#include <cctype>

namespace gpureap::exporter {

bool bearer_matches(std::string_view authorization, std::string_view token) {
  if (token.empty()) return false;
  constexpr std::string_view kScheme = "bearer";
  if (authorization.size() <= kScheme.size()) return false;
  // The scheme name is case-insensitive (RFC 7235); the token is not.
  for (size_t i = 0; i < kScheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != kScheme[i]) return false;
  auto rest = authorization.substr(kScheme.size());
  if (rest.front() != ' ') return false;
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  while (!rest.empty() && rest.back() == ' ') rest.remove_suffix(1);
  unsigned char diff = rest.size() == token.size() ? 0 : 1;
  for (size_t i = 0; i < token.size(); ++i) {
    unsigned char given = i < rest.size() ? static_cast<unsigned char>(rest[i]) : 0;
    diff |= static_cast<unsigned char>(given ^ static_cast<unsigned char>(token[i]));
  }
  return diff == 0;
}

}  // namespace gpureap::exporter

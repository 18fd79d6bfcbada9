#include "procfs/dir_entries.h"

#include <dirent.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>

#include "procfs/resource_shortage.h"

namespace gpureap::procfs {
namespace {

core::Error unlistable(const std::string& dir, int err) {
  return {"cannot list " + dir + ": " + std::strerror(err),
          is_resource_shortage(err) ? shortage_remedy(err) : "check that this user may read " + dir,
          err};
}

}  // namespace

core::Result<std::vector<std::string>> list_existing_dir(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (!d) {
    if (errno == ENOENT || errno == ENOTDIR) return names;
    return unlistable(dir, errno);
  }
  const int err = for_each_entry(d, [&](const char* name) {
    names.emplace_back(name);
    return true;
  });
  ::closedir(d);
  if (err != 0) return unlistable(dir, err);
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string> list_dir(const std::string& dir) {
  auto names = list_existing_dir(dir);
  return names ? std::move(*names) : std::vector<std::string>{};
}

std::optional<unsigned> number_suffix(std::string_view name, std::string_view prefix) {
  if (!name.starts_with(prefix)) return std::nullopt;
  std::string_view digits = name.substr(prefix.size());
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c)) != 0;
      }))
    return std::nullopt;
  unsigned v = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return v;
}

}  // namespace gpureap::procfs

#pragma once
// Reading sysfs attributes for the DRM and KFD readers. sysfs has one value per file, and a
// file a driver does not publish is simply absent: a missing file is an empty figure, not a
// problem. A file that exists but cannot be read, or holds something other than the value
// its name promises, is a warning that names the file and why, and its figure stays empty.
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpureap::backend::drm {

// The number after `prefix` in a name made of the prefix and decimal digits only
// ("card0" with "card": 0); empty for anything else ("card0-DP-1", "card").
std::optional<unsigned> number_suffix(std::string_view name, std::string_view prefix);

// dir/name.
std::string child(const std::string& dir, std::string_view name);

// The entries of a directory, sorted by name, without "." and ".."; empty when it cannot
// be listed.
std::vector<std::string> list_dir(const std::string& dir);

// The path names a directory (following symlinks, as the class/ links of sysfs must be).
bool is_dir(const std::string& path);

// Reads attribute files, adding a warning for each file that exists but yields no value.
class AttributeReader {
 public:
  explicit AttributeReader(std::vector<std::string>& warnings) : warnings_(warnings) {}

  // The file's text without surrounding whitespace; empty when absent or unreadable.
  std::optional<std::string> text(const std::string& path);
  // A decimal number ("8573157376\n").
  std::optional<uint64_t> decimal(const std::string& path);
  // A hexadecimal number with its 0x prefix ("0x1002\n"), as PCI ids are written.
  std::optional<uint64_t> hex(const std::string& path);
  // A device number written "MAJOR:MINOR" ("226:128\n").
  std::optional<dev_t> device_number(const std::string& path);

  void warn(const std::string& path, const std::string& why);

 private:
  std::optional<uint64_t> number(const std::string& path, int base);

  std::vector<std::string>& warnings_;
};

}  // namespace gpureap::backend::drm

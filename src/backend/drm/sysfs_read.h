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

#include "procfs/dir_entries.h"

namespace gpureap::backend::drm {

using procfs::list_dir;
using procfs::number_suffix;

// dir/name.
std::string child(const std::string& dir, std::string_view name);

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

#pragma once
// Names in the directories of /proc, /dev and /sys: the entries of one, sorted, and the numbered
// names their kernel objects have (card0, renderD128, hwmon3, a PID).
#include <dirent.h>

#include <cerrno>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gpureap::procfs {

// Calls `each(name)` for the entries of an open directory but "." and "..", until it returns
// false; returns 0, or the errno where readdir failed (its end and its failure differ only in
// errno: a listing cut short must not read as a short directory).
template <class Each>
int for_each_entry(DIR* dir, Each&& each) {
  for (;;) {
    errno = 0;
    dirent* e = ::readdir(dir);
    if (!e) return errno;
    const char* name = e->d_name;
    if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'))) continue;
    if (!each(name)) return 0;
  }
}

// The entries of a directory, sorted by name, without "." and ".."; empty when it cannot be
// listed.
std::vector<std::string> list_dir(const std::string& dir);
// The same, but only a directory that is not there (or not a directory) lists as empty; one
// that could not be read says why (gpureap out of file descriptors: what to do).
core::Result<std::vector<std::string>> list_existing_dir(const std::string& dir);

// The number after `prefix` in a name made of the prefix and decimal digits only ("card0" with
// "card": 0); empty for anything else ("card0-DP-1", "card", a number too large).
std::optional<unsigned> number_suffix(std::string_view name, std::string_view prefix);

}  // namespace gpureap::procfs

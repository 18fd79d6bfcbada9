#pragma once
// gpureap itself ran short of file descriptors or memory while reading /proc or /dev. Unlike a
// process that vanished or a permission refused, what could not be read may well hold a GPU,
// and no privilege would show it: the limit is gpureap's own (or the machine's), and the
// remedy is to raise it.
#include <cstddef>
#include <optional>
#include <string>

#include "core/shortage.h"

namespace gpureap::procfs {

// EMFILE, ENFILE, ENOMEM, ENOBUFS: a read failed for want of a resource, not for what it read.
bool is_resource_shortage(int err);
// The kind of shortage `err` is, for the advice that depends on it; empty for any other errno.
std::optional<core::Shortage> shortage_of(int err);

// What to do about `err` (a shortage): for EMFILE, gpureap's own limit of open files (its soft
// and hard RLIMIT_NOFILE) and how to raise it from there (raise_descriptor_limit); for ENFILE,
// the system's; for memory, memory.
std::string shortage_remedy(int err);

// gpureap's own file descriptors, when it has no more than `spare` left under its soft limit of
// open files (RLIMIT_NOFILE): a library that opens a few files of its own failed for want of
// them, whatever its return code says. Empty with more to spare, or an unlimited limit.
struct DescriptorUse {
  size_t open = 0;   // descriptors open now (all of them when none could be had)
  size_t limit = 0;  // the soft limit
  size_t hard = 0;   // the hard limit, to which the soft one can be raised without privilege
};
std::optional<DescriptorUse> descriptors_nearly_spent(size_t spare);
// How to raise a soft limit of `limit` open files (hard limit `hard`) to enough for gpureap and
// a library it loads: in the shell (a root one where the soft limit is the hard one already), and
// in a systemd unit. The one advice on gpureap's own limit of open files.
std::string raise_descriptor_limit(size_t limit, size_t hard);

}  // namespace gpureap::procfs

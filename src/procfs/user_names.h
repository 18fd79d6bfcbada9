#pragma once
#include <sys/types.h>

#include <string>

#include "core/result.h"

namespace gpureap::procfs {

// The login name of a uid, or the number itself when the passwd database has none. Read again
// a minute after it was last read.
std::string user_name(uid_t uid);

// A user as people type one (`--user`): a login name or a numeric uid. A name the passwd
// database does not know is an error, never a user who simply owns nothing.
core::Result<uid_t> resolve_user(const std::string& user);

}  // namespace gpureap::procfs

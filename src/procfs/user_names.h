#pragma once
#include <sys/types.h>

#include <string>

namespace gpureap::procfs {

// The login name of a uid, or the number itself when the passwd database has none.
std::string user_name(uid_t uid);

}  // namespace gpureap::procfs

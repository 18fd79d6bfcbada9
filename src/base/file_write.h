#pragma once
// Writing a whole buffer to a file descriptor: write(2) may write less than asked (a signal, a
// full pipe) and must be called again for the rest.
#include <string_view>

namespace gpureap::base {

// All of `data` to `fd`, retrying after EINTR; false with errno set (EIO where write(2) wrote
// nothing and said no error) otherwise.
bool write_all(int fd, std::string_view data);

}  // namespace gpureap::base

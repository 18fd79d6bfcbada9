#include "base/hostname.h"

#include <unistd.h>

namespace gpureap::base {

std::string host_name() {
  char buf[256] = {};  // one byte more than POSIX's HOST_NAME_MAX: always terminated
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

}  // namespace gpureap::base

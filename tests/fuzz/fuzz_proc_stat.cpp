// /proc/PID/stat (procfs::parse_stat): any text a process can make its stat say, via comm.
#include <cctype>

#include "fuzz_check.h"
#include "procfs/parsers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto st = gpureap::procfs::parse_stat(fuzz_text(data, size));
  if (st) {
    FUZZ_CHECK(st->pid > 0);
    FUZZ_CHECK(st->ppid >= 0);
    FUZZ_CHECK(std::isalpha(static_cast<unsigned char>(st->state)));
    (void)st->is_kernel_thread();
  } else {
    FUZZ_CHECK(!st.error().message.empty());
  }
  return 0;
}

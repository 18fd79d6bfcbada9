// /proc/PID/status (procfs::parse_status) and the small files read beside it: cmdline, wchan,
// and /proc/stat's btime.
#include "fuzz_check.h"
#include "procfs/parsers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text = fuzz_text(data, size);
  auto status = gpureap::procfs::parse_status(text);
  FUZZ_CHECK(status.uid.has_value() == status.euid.has_value());
  auto argv = gpureap::procfs::parse_cmdline(text);
  FUZZ_CHECK(argv.size() <= size + 1);
  if (auto wchan = gpureap::procfs::parse_wchan(text)) FUZZ_CHECK(!wchan->empty());
  (void)gpureap::procfs::parse_boot_time(text);
  return 0;
}

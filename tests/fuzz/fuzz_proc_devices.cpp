// /proc/devices (procfs::parse_char_major): the majors of the GPU drivers' character devices.
#include "fuzz_check.h"
#include "procfs/parsers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text = fuzz_text(data, size);
  for (std::string_view driver : {"nvidia-frontend", "nvidia-uvm", "nvidia-caps", "drm", "kfd", ""})
    (void)gpureap::procfs::parse_char_major(text, driver);
  return 0;
}

// Memory sizes of options and config keys (core::parse_byte_size).
#include "core/byte_size.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto bytes = gpureap::core::parse_byte_size(fuzz_text(data, size));
  if (bytes) {
    FUZZ_CHECK(*bytes <= (1ULL << 63));  // at most 2^63 (core/byte_size.h)
  } else {
    FUZZ_CHECK(!bytes.error().message.empty());
  }
  return 0;
}

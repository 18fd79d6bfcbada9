// Durations of options and config keys (core::parse_duration) and their summary spelling.
#include "core/duration.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto d = gpureap::core::parse_duration(fuzz_text(data, size));
  if (d) {
    // Not negative, at most 366 days (core/duration.h).
    FUZZ_CHECK(d->count() >= 0 && d->count() <= 366LL * 86'400'000LL);
    FUZZ_CHECK(!gpureap::core::format_duration(*d).empty());
    (void)gpureap::core::seconds(*d);
  }
  return 0;
}

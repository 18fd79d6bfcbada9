// The daemon's TOML config (daemon::parse_config): toml++ and every check of config_reader,
// config_policy and config_alert. Every failure must say something.
#include <string>

#include "daemon/config.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto config = gpureap::daemon::parse_config(fuzz_text(data, size), "fuzz.toml");
  if (!config) FUZZ_CHECK(!config.error().message.empty());
  return 0;
}

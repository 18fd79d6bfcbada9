// /proc/PID/fdinfo/FD of a DRM file (backend::drm::parse_fdinfo): what a driver prints there,
// and whatever else an fd that is no DRM file, or a future driver, holds.
#include "backend/drm/fdinfo.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto text = fuzz_text(data, size);
  auto client = gpureap::backend::drm::parse_fdinfo(text);
  if (client) {
    FUZZ_CHECK(!client->driver.empty());
    // What parses is what the client table reads: it never skips a file it could parse.
    FUZZ_CHECK(gpureap::backend::drm::has_usage_stats(text));
    FUZZ_CHECK(!client->amdgpu_legacy || (client->driver == "amdgpu" && client->pdev));
    FUZZ_CHECK(!client->pdev || !client->pdev->empty());
    for (const auto& r : client->regions) {
      FUZZ_CHECK(!r.name.empty());
      FUZZ_CHECK(client->region(r.name) == &r);  // a name is listed once
      (void)gpureap::backend::drm::is_device_local(r.name);
    }
    for (const auto& e : client->engines) FUZZ_CHECK(!e.name.empty());
  } else {
    FUZZ_CHECK(!client.error().message.empty());
    FUZZ_CHECK(client.error().message.size() < 512);  // the file's text is quoted shortened
  }
  return 0;
}

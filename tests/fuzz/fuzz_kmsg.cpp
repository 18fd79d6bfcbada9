// The kernel log (kernel::KmsgLineParser, parse_kmsg_text) and NVIDIA's Xid lines in it
// (kernel::nvidia::parse_xid_line): a saved log can hold anything, and any process can write
// to /dev/kmsg. The first byte picks where the text is cut in two, as a follower reads it.
#include "backend/registry.h"
#include "fuzz_check.h"
#include "kernel/gpu_events.h"
#include "kernel/kmsg_record.h"
#include "kernel/nvidia/xid_line.h"
#include "kernel/pci_address.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const auto parsers =
      gpureap::backend::kernel_log_parsers(gpureap::backend::builtin_backends());
  auto text = fuzz_text(data + 1, size - 1);
  auto whole = gpureap::kernel::parse_kmsg_text(text);
  // Read in two pieces, the records are the same: nothing depends on where a read ends.
  size_t cut = text.empty() ? 0 : data[0] % (text.size() + 1);
  gpureap::kernel::KmsgLineParser pieces;
  auto records = pieces.feed(text.substr(0, cut));
  for (auto& r : pieces.feed(text.substr(cut))) records.push_back(std::move(r));
  for (auto& r : pieces.finish()) records.push_back(std::move(r));
  FUZZ_CHECK(records.size() == whole.records.size());
  FUZZ_CHECK(pieces.malformed() == whole.malformed);
  for (size_t i = 0; i < records.size(); ++i) {
    const auto& r = records[i];
    FUZZ_CHECK(r.text == whole.records[i].text);
    FUZZ_CHECK(r.dict == whole.records[i].dict);
    FUZZ_CHECK(r.level <= 7);
    FUZZ_CHECK(r.text.find('\n') == std::string::npos);
    if (auto e = gpureap::kernel::gpu_event(
            r, 1'700'000'000, std::chrono::system_clock::time_point(std::chrono::seconds(1)),
            parsers)) {
      FUZZ_CHECK(e->pci_address.size() == 10);  // dddd:bb:dd
      FUZZ_CHECK(gpureap::kernel::normalize_pci_address(e->pci_address) == e->pci_address);
      FUZZ_CHECK(!e->pid || *e->pid > 0);
      FUZZ_CHECK(!e->process_name || !e->process_name->empty());
    }
  }
  (void)gpureap::kernel::nvidia::parse_xid_line(text);
  return 0;
}

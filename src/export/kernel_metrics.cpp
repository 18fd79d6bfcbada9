#include "export/kernel_metrics.h"

#include <chrono>

namespace gpureap::exporter {

void kernel_families(const MetricsInput& in, std::vector<MetricFamily>& out) {
  if (!in.kernel_events) return;
  out.push_back(MetricFamily{"gpureap_kernel_log_readable",
                             "1 when the daemon can read the kernel log (for Xid errors), else 0"}
                    .add({}, in.kernel_log_readable ? 1 : 0));
  MetricFamily total{"gpureap_xid_events_total",
                     "NVIDIA Xid errors in the kernel log since the daemon started reading it "
                     "(the first read includes what the log kept since boot)",
                     MetricType::Counter};
  MetricFamily last{"gpureap_xid_last_event_timestamp_seconds",
                    "When the last Xid error of this number was logged, seconds since the epoch"};
  for (const auto& c : *in.kernel_events) {
    if (c.kind != "xid") continue;
    const core::Gpu* g = c.gpu ? in.snapshot.gpu(*c.gpu) : nullptr;
    // A GPU no backend reports (off the bus, say) is still named, by its PCI address.
    std::vector<Label> labels{{"gpu", g ? std::to_string(g->index) : ""},
                              {"uuid", g && g->uuid ? *g->uuid : ""},
                              {"pci_bus_id", c.pci_address},
                              {"xid", std::to_string(c.code)}};
    total.add(labels, static_cast<double>(c.events));
    if (c.last_time)
      last.add(labels, std::chrono::duration<double>(c.last_time->time_since_epoch()).count());
  }
  out.push_back(std::move(total));
  out.push_back(std::move(last));
}

}  // namespace gpureap::exporter

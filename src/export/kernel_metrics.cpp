#include "export/kernel_metrics.h"

#include <chrono>
#include <map>
#include <string>
#include <utility>

#include "metric/names.h"

namespace gpureap::exporter {
namespace {

// The two families of one name: every kind's, or one kind's under its earlier alias.
struct EventFamilies {
  MetricFamily total, last;

  void add(const std::vector<Label>& labels, const core::KernelEventCount& c) {
    total.add(labels, static_cast<double>(c.events));
    if (c.last_time)
      last.add(labels, std::chrono::duration<double>(c.last_time->time_since_epoch()).count());
  }
  void move_into(std::vector<MetricFamily>& out) {
    out.push_back(std::move(total));
    out.push_back(std::move(last));
  }
};

EventFamilies every_kind() {
  return {{metric::kGpuKernelEvents,
           "GPU errors in the kernel log since the daemon started reading it, per GPU, kind (the "
           "vendor parser's) and code (the first read includes what the log kept since boot)",
           MetricType::Counter},
          {metric::kGpuKernelLastEvent,
           "When the last GPU error of this kind and code was logged, seconds since the epoch"}};
}

EventFamilies alias_of(const std::string& alias) {
  return {{"gpureap_" + alias + "_events_total",
           "Deprecated alias of gpureap_gpu_kernel_events_total{kind=\"" + alias +
               "\"}, removed in the next release",
           MetricType::Counter},
          {"gpureap_" + alias + "_last_event_timestamp_seconds",
           "Deprecated alias of gpureap_gpu_kernel_last_event_timestamp_seconds{kind=\"" + alias +
               "\"}, removed in the next release"}};
}

}  // namespace

void kernel_families(const MetricsInput& in, std::vector<MetricFamily>& out) {
  if (!in.kernel_events) return;
  out.push_back(MetricFamily{metric::kKernelLogReadable,
                             "1 when the daemon can read the kernel log (for GPU errors), else 0"}
                    .add({}, in.kernel_log_readable ? 1 : 0));
  EventFamilies all = every_kind();
  std::map<std::string, EventFamilies> aliases;
  for (const auto& c : *in.kernel_events) {
    const core::Gpu* g = c.gpu ? in.snapshot.gpu(*c.gpu) : nullptr;
    // A GPU no backend reports (off the bus, say) is still named, by its PCI address.
    std::vector<Label> labels{{metric::label::kGpu, g ? std::to_string(g->index) : ""},
                              {metric::label::kUuid, g && g->uuid ? *g->uuid : ""},
                              {metric::label::kPciBusId, c.pci_address}};
    if (!c.metric_alias.empty()) {
      auto it = aliases.try_emplace(c.metric_alias, alias_of(c.metric_alias)).first;
      auto old = labels;
      old.push_back({c.metric_alias, std::to_string(c.code)});
      it->second.add(old, c);
    }
    labels.push_back({metric::label::kVendor, c.vendor});
    labels.push_back({metric::label::kKind, c.kind});
    labels.push_back({metric::label::kCode, std::to_string(c.code)});
    all.add(labels, c);
  }
  all.move_into(out);
  for (auto& [alias, f] : aliases) f.move_into(out);
}

}  // namespace gpureap::exporter

#include "example_backend.h"

#include <utility>

namespace gpureap::testing {
namespace {

constexpr uint64_t kExampleGiB = 1ull << 30;

class ExampleBackend final : public backend::GpuBackend {
 public:
  ExampleBackend(dev_t node, std::vector<ExampleListing> listings)
      : node_(node), listings_(std::move(listings)) {}

  core::BackendReport collect() override {
    core::BackendReport report;
    report.name = "example";
    report.vendor = "example";
    report.available = true;
    report.driver_version = "0.9";
    core::Gpu gpu;
    gpu.index = 0;
    gpu.name = "Example E1";
    gpu.uuid = "EX-0001";
    gpu.minor = 0;
    gpu.device_numbers = {node_};
    gpu.memory.total_bytes = 32 * kExampleGiB;
    uint64_t used = 0;
    for (const auto& l : listings_) {
      core::DriverProcess p;
      p.pid = l.pid;
      p.used_bytes = l.used_bytes;
      used += l.used_bytes;
      gpu.processes.push_back(p);
    }
    gpu.memory.used_bytes = used;
    report.gpus.push_back(std::move(gpu));
    return report;
  }

 private:
  dev_t node_;
  std::vector<ExampleListing> listings_;
};

}  // namespace

backend::BackendEntry example_entry(dev_t node, std::vector<ExampleListing> listings) {
  backend::BackendEntry e;
  e.name = "example";
  e.vendor = "example";
  e.calls_driver_library = false;
  e.make = [node, listings](const backend::BackendSettings&) {
    return std::make_unique<ExampleBackend>(node, listings);
  };
  procfs::DeviceNode gpu_node{"examplegpu", "", "examplegpu", true, true, true};
  gpu_node.devices_name = "examplegpu";                          // its /proc/devices name
  gpu_node.sys_dev_file = "class/examplegpu/examplegpu{n}/dev";  // each node's own MAJ:MIN
  e.device_nodes = {gpu_node};
  e.words.vendor = "Example";
  e.words.check_driver = "example-smi";
  e.words.reset = "example-smi --reset {gpu}";
  return e;
}

}  // namespace gpureap::testing

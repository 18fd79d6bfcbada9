#include "backend/nvml/kernel_gpus.h"

#include <sys/sysmacros.h>

#include <algorithm>
#include <cctype>
#include <charconv>

#include "backend/nvml/device_major.h"
#include "procfs/dir_entries.h"
#include "procfs/file_read.h"
#include "text/trim.h"

namespace gpureap::backend::nvml {
namespace {

constexpr std::string_view kSource = "the kernel's /proc/driver/nvidia/gpus";

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

GpuInformation parse_gpu_information(std::string_view text) {
  GpuInformation info;
  while (!text.empty()) {
    size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view key = text::trim(line.substr(0, colon)),
                     value = text::trim(line.substr(colon + 1));
    if (value.empty()) continue;
    if (key == "Model") {
      info.model = std::string(value);
    } else if (key == "GPU UUID") {
      info.uuid = std::string(value);
    } else if (key == "Bus Location") {
      info.bus_location = lower(value);
    } else if (key == "Device Minor") {
      unsigned minor = 0;
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), minor);
      if (ec == std::errc() && p == value.data() + value.size() && minor < 255)
        info.device_minor = minor;
    } else if (key == "GPU Excluded") {
      info.excluded = value == "Yes";
    }
  }
  return info;
}

std::vector<core::Gpu> read_kernel_gpus(const std::string& proc_root) {
  const std::string dir = proc_root + "/driver/nvidia/gpus";
  std::vector<GpuInformation> found;
  for (const auto& bus : procfs::list_dir(dir)) {
    auto file = procfs::read_file(dir + "/" + bus + "/information", 64 * 1024);
    if (!file.ok()) return {};
    GpuInformation info = parse_gpu_information(file.data);
    if (!info.bus_location || !info.device_minor) return {};
    if (!info.excluded) found.push_back(std::move(info));
  }
  // Bus locations have one fixed-width form (domain:bus:device.function in hex), so their text
  // order is the PCI order.
  std::sort(found.begin(), found.end(), [](const GpuInformation& a, const GpuInformation& b) {
    return *a.bus_location < *b.bus_location;
  });
  std::vector<core::Gpu> gpus;
  for (auto& info : found) {
    core::Gpu g;
    g.index = static_cast<unsigned>(gpus.size());
    g.vendor = "nvidia";
    g.name = std::move(info.model);
    g.uuid = std::move(info.uuid);
    g.pci_bus_id = std::move(info.bus_location);
    g.minor = info.device_minor;
    g.device_numbers.push_back(::makedev(kNvidiaDeviceMajor, *info.device_minor));
    g.processes_error = "the driver did not answer: its process lists are unknown";
    g.known_from_kernel = std::string(kSource);
    gpus.push_back(std::move(g));
  }
  return gpus;
}

}  // namespace gpureap::backend::nvml

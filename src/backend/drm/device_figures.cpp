#include "backend/drm/device_figures.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

namespace gpureap::backend::drm {
namespace {

constexpr uint64_t kMaxBusyPercent = 100;
constexpr uint64_t kMilliPerUnit = 1000;
constexpr double kMicroPerUnit = 1e6;

// amdgpu's own attributes: VRAM in bytes, the GPU's load, the board's name.
void read_amdgpu_attributes(const std::string& dir, AttributeReader& r, DrmDevice& d) {
  d.memory_total_bytes = r.decimal(dir + "/mem_info_vram_total");
  d.memory_used_bytes = r.decimal(dir + "/mem_info_vram_used");
  std::string busy = dir + "/gpu_busy_percent";
  if (auto v = r.decimal(busy)) {
    if (*v <= kMaxBusyPercent)
      d.busy_percent = static_cast<unsigned>(*v);
    else
      r.warn(busy, "above 100 percent: " + std::to_string(*v));
  }
  // Boards without FRU data in their VBIOS publish an empty name.
  if (auto name = r.text(dir + "/product_name"); name && !name->empty()) d.name = std::move(name);
}

// xe gives each tile's VRAM size; a card's memory is its tiles' sum. Kernels put the file in
// the tile's directory (tile0/physical_vram_size_bytes); its vram0 directory is read too.
std::optional<uint64_t> read_xe_tile_vram(const std::string& dir, AttributeReader& r) {
  std::optional<uint64_t> total;
  for (const auto& name : list_dir(dir)) {
    if (!number_suffix(name, "tile")) continue;
    std::string tile = child(dir, name);
    auto bytes = r.decimal(tile + "/physical_vram_size_bytes");
    if (!bytes) bytes = r.decimal(tile + "/vram0/physical_vram_size_bytes");
    if (bytes) total = total.value_or(0) + *bytes;
  }
  return total;
}

// hwmon<N> directories in their numeric order (hwmon2 before hwmon10).
std::vector<std::string> hwmon_dirs(const std::string& dir) {
  std::vector<std::pair<unsigned, std::string>> found;
  const std::string root = child(dir, "hwmon");
  for (const auto& name : list_dir(root))
    if (auto n = number_suffix(name, "hwmon")) found.emplace_back(*n, child(root, name));
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  out.reserve(found.size());
  for (auto& [n, path] : found) out.push_back(std::move(path));
  return out;
}

std::optional<unsigned> read_temperature(const std::string& hwmon, AttributeReader& r) {
  std::string path = hwmon + "/temp1_input";
  auto milli = r.decimal(path);
  if (!milli) return std::nullopt;
  uint64_t celsius = *milli / kMilliPerUnit;  // whole degrees, as other GPU tools show
  if (celsius > std::numeric_limits<unsigned>::max()) {
    r.warn(path, "not a temperature: " + std::to_string(*milli));
    return std::nullopt;
  }
  return static_cast<unsigned>(celsius);
}

// power1_average is the smoothed figure; newer SMU firmware gives only power1_input.
std::optional<double> read_power(const std::string& hwmon, AttributeReader& r) {
  auto micro = r.decimal(hwmon + "/power1_average");
  if (!micro) micro = r.decimal(hwmon + "/power1_input");
  if (!micro) return std::nullopt;
  return static_cast<double>(*micro) / kMicroPerUnit;
}

// Each sensor from the first hwmon directory that has it.
void read_hwmon(const std::string& dir, AttributeReader& r, DrmDevice& d) {
  for (const auto& hwmon : hwmon_dirs(dir)) {
    if (!d.temperature_celsius) d.temperature_celsius = read_temperature(hwmon, r);
    if (!d.power_watts) d.power_watts = read_power(hwmon, r);
  }
}

}  // namespace

void read_device_figures(const std::string& device_dir, AttributeReader& reader,
                         DrmDevice& device) {
  read_amdgpu_attributes(device_dir, reader, device);
  if (!device.memory_total_bytes) device.memory_total_bytes = read_xe_tile_vram(device_dir, reader);
  read_hwmon(device_dir, reader, device);
}

}  // namespace gpureap::backend::drm

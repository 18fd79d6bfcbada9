#include "backend/nvml/mig_capabilities.h"

#include <algorithm>
#include <charconv>
#include <tuple>

#include "procfs/dir_entries.h"
#include "procfs/file_read.h"
#include "text/trim.h"

namespace gpureap::backend::nvml {
namespace {

// "gpu12" with prefix "gpu" -> 12; anything else (gpu, gpu1x, gpu-1) is no instance folder.
std::optional<unsigned> numbered(std::string_view name, std::string_view prefix) {
  if (name.size() <= prefix.size() || name.substr(0, prefix.size()) != prefix) return std::nullopt;
  std::string_view digits = name.substr(prefix.size());
  unsigned value = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return value;
}

std::optional<unsigned> read_minor(const std::string& access_path) {
  auto file = procfs::read_file(access_path, 4096);
  if (!file.ok()) return std::nullopt;
  return parse_capability_minor(file.data);
}

}  // namespace

std::optional<unsigned> parse_capability_minor(std::string_view text) {
  while (!text.empty()) {
    size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    size_t colon = line.find(':');
    if (colon == std::string_view::npos || text::trim(line.substr(0, colon)) != "DeviceFileMinor")
      continue;
    std::string_view value = text::trim(line.substr(colon + 1));
    unsigned minor = 0;
    auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), minor);
    if (ec != std::errc() || p != value.data() + value.size() || value.empty()) return std::nullopt;
    return minor;
  }
  return std::nullopt;
}

std::vector<MigCapability> read_mig_capabilities(const std::string& proc_root) {
  const std::string root = proc_root + "/driver/nvidia/capabilities";
  std::vector<MigCapability> found;
  for (const auto& gpu_dir : procfs::list_dir(root)) {
    auto gpu_minor = numbered(gpu_dir, "gpu");
    if (!gpu_minor) continue;
    const std::string mig = root + "/" + gpu_dir + "/mig";
    for (const auto& gi_dir : procfs::list_dir(mig)) {
      auto gi = numbered(gi_dir, "gi");
      if (!gi) continue;
      const std::string gi_path = mig + "/" + gi_dir;
      if (auto minor = read_minor(gi_path + "/access"))
        found.push_back({*gpu_minor, *gi, std::nullopt, *minor});
      for (const auto& ci_dir : procfs::list_dir(gi_path)) {
        auto ci = numbered(ci_dir, "ci");
        if (!ci) continue;
        if (auto minor = read_minor(gi_path + "/" + ci_dir + "/access"))
          found.push_back({*gpu_minor, *gi, *ci, *minor});
      }
    }
  }
  // nullopt sorts first: the GPU instance's own file before its compute instances'.
  std::sort(found.begin(), found.end(), [](const MigCapability& a, const MigCapability& b) {
    return std::tie(a.gpu_minor, a.gpu_instance, a.compute_instance) <
           std::tie(b.gpu_minor, b.gpu_instance, b.compute_instance);
  });
  return found;
}

const MigCapability* find_capability(const std::vector<MigCapability>& capabilities,
                                     unsigned device_minor) {
  auto it = std::find_if(capabilities.begin(), capabilities.end(),
                         [&](const MigCapability& c) { return c.device_minor == device_minor; });
  return it == capabilities.end() ? nullptr : &*it;
}

}  // namespace gpureap::backend::nvml

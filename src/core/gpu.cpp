#include "core/gpu.h"

#include <algorithm>
#include <array>
#include <cctype>

#include "text/enum_names.h"

namespace gpureap::core {

const char* to_string(GpuProcessKind kind) {
  switch (kind) {
    case GpuProcessKind::Compute:
      return "compute";
    case GpuProcessKind::Graphics:
      return "graphics";
    case GpuProcessKind::ServerClient:
      return "mps";
  }
  return "";  // no enumerator: no name
}

const char* to_string(BackendErrorCode code) {
  switch (code) {
    case BackendErrorCode::LibraryNotFound:
      return "library-not-found";
    case BackendErrorCode::DriverNotLoaded:
      return "driver-not-loaded";
    case BackendErrorCode::VersionMismatch:
      return "version-mismatch";
    case BackendErrorCode::NoPermission:
      return "no-permission";
    case BackendErrorCode::SymbolMissing:
      return "symbol-missing";
    case BackendErrorCode::InitFailed:
      return "init-failed";
    case BackendErrorCode::Internal:
      return "internal";
    case BackendErrorCode::NotAnswering:
      return "not-answering";
    case BackendErrorCode::NotConfigured:
      return "not-configured";
    case BackendErrorCode::NoDevice:
      return "no-device";
    case BackendErrorCode::OutOfResources:
      return "out-of-resources";
  }
  return "";  // no enumerator: no name
}

std::optional<BackendErrorCode> backend_error_code(const std::string& name) {
  return text::enum_from_name<BackendErrorCode>(name);
}

std::string BackendStatus::label() const {
  std::string out = name;
  for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

const std::string* BackendStatus::detail(const std::string& key) const {
  for (const auto& [k, v] : details)
    if (k == key) return &v;
  return nullptr;
}

void BackendStatus::set_detail(const std::string& key, std::string value) {
  for (auto& [k, v] : details)
    if (k == key) {
      v = std::move(value);
      return;
    }
  details.emplace_back(key, std::move(value));
}

bool DriverReading::any_available() const {
  return std::any_of(backends.begin(), backends.end(),
                     [](const BackendStatus& b) { return b.available; });
}

const BackendStatus* DriverReading::first_down() const {
  for (const auto& b : backends)
    if (!b.available && b.error_code != BackendErrorCode::NoDevice) return &b;
  return nullptr;
}

const BackendStatus* DriverReading::backend_of(const Gpu& gpu) const {
  for (const auto& b : backends)
    if (b.name == gpu.backend) return &b;
  return nullptr;
}

const Gpu* DriverReading::gpu(unsigned index) const {
  for (const auto& g : gpus)
    if (g.index == index) return &g;
  return nullptr;
}

std::string gpu_key(const Gpu& gpu) {
  if (gpu.uuid && !gpu.uuid->empty()) return gpu.vendor + ":" + *gpu.uuid;
  if (gpu.pci_bus_id && !gpu.pci_bus_id->empty()) return gpu.vendor + ":pci:" + *gpu.pci_bus_id;
  return gpu.vendor + ":" + gpu.backend + ":" + std::to_string(gpu.backend_index);
}

DriverReading combine(std::vector<BackendReport> reports, const std::vector<unsigned>& widths) {
  DriverReading out;
  unsigned offset = 0;
  for (size_t i = 0; i < reports.size(); ++i) {
    auto& r = reports[i];
    unsigned next_offset = offset + (i < widths.size() ? widths[i] : 0);
    for (auto& g : r.gpus) {
      g.backend_index = g.index;
      g.index = offset + g.backend_index;
      g.backend = r.name;
      if (g.vendor.empty()) g.vendor = r.vendor;
      g.key = gpu_key(g);
      next_offset = std::max(next_offset, g.index + 1);
      out.gpus.push_back(std::move(g));
    }
    offset = next_offset;
    out.backends.push_back(std::move(static_cast<BackendStatus&>(r)));
  }
  std::stable_sort(out.gpus.begin(), out.gpus.end(),
                   [](const Gpu& a, const Gpu& b) { return a.index < b.index; });
  return out;
}

}  // namespace gpureap::core

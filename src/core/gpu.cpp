#include "core/gpu.h"

#include <algorithm>
#include <array>
#include <cctype>

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
  return "?";
}

namespace {
constexpr std::array<std::pair<BackendErrorCode, const char*>, 10> kErrorNames{{
    {BackendErrorCode::LibraryNotFound, "library-not-found"},
    {BackendErrorCode::DriverNotLoaded, "driver-not-loaded"},
    {BackendErrorCode::VersionMismatch, "version-mismatch"},
    {BackendErrorCode::NoPermission, "no-permission"},
    {BackendErrorCode::SymbolMissing, "symbol-missing"},
    {BackendErrorCode::InitFailed, "init-failed"},
    {BackendErrorCode::Internal, "internal"},
    {BackendErrorCode::NotAnswering, "not-answering"},
    {BackendErrorCode::NotConfigured, "not-configured"},
    {BackendErrorCode::NoDevice, "no-device"},
}};
}  // namespace

const char* to_string(BackendErrorCode code) {
  for (const auto& [c, name] : kErrorNames)
    if (c == code) return name;
  return "internal";
}

std::optional<BackendErrorCode> backend_error_code(const std::string& name) {
  for (const auto& [c, n] : kErrorNames)
    if (name == n) return c;
  return std::nullopt;
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

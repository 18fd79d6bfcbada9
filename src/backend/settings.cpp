#include "backend/settings.h"

#include <filesystem>

namespace gpureap::backend {

std::string folder_above(const std::string& proc_root) {
  auto p = std::filesystem::path(proc_root).lexically_normal();
  if (!p.has_filename()) p = p.parent_path();  // "/host/proc/"
  auto parent = p.parent_path();
  return parent.empty() ? "." : parent.string();
}

std::string host_root(const BackendSettings& settings) {
  return settings.runtime_root.empty() ? folder_above(settings.proc_root) : settings.runtime_root;
}

}  // namespace gpureap::backend

#include "backend/nvml/library.h"

#include <dlfcn.h>
#include <link.h>

#include <utility>

namespace gpureap::backend::nvml {
namespace {

constexpr const char* kDefaultNames[] = {"libnvidia-ml.so.1", "libnvidia-ml.so"};

std::string last_dlerror() {
  const char* text = dlerror();
  return text != nullptr ? text : "unknown dlopen error";
}

// A bare soname says little about which driver answered; the link map has the full path.
std::string loaded_path(void* handle, const std::string& requested) {
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr &&
      map->l_name[0] != '\0') {
    return map->l_name;
  }
  return requested;
}

}  // namespace

core::Result<Library> Library::open(const std::optional<std::string>& path) {
  // RTLD_LOCAL: NVML's symbols must not interpose on anything else in the process.
  constexpr int kFlags = RTLD_NOW | RTLD_LOCAL;
  if (path && !path->empty()) {
    void* handle = dlopen(path->c_str(), kFlags);
    if (handle == nullptr) {
      return core::Error{*path + " could not be loaded: " + last_dlerror(),
                         "check the path given with --nvml-library or GPUREAP_NVML_LIBRARY"};
    }
    return Library(handle, loaded_path(handle, *path));
  }
  std::string first_error;
  for (const char* name : kDefaultNames) {
    if (void* handle = dlopen(name, kFlags)) return Library(handle, loaded_path(handle, name));
    if (first_error.empty()) first_error = last_dlerror();
  }
  return core::Error{
      std::string(kDefaultNames[0]) + " could not be loaded: " + first_error +
          " (no NVIDIA driver installed, or NVML is not on the library path)",
      "install the NVIDIA driver, or point GPUREAP_NVML_LIBRARY or --nvml-library at "
      "libnvidia-ml.so.1"};
}

Library::Library(Library&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)), path_(std::move(other.path_)) {}

Library& Library::operator=(Library&& other) noexcept {
  if (this != &other) {
    if (handle_ != nullptr) dlclose(handle_);
    handle_ = std::exchange(other.handle_, nullptr);
    path_ = std::move(other.path_);
  }
  return *this;
}

Library::~Library() {
  if (handle_ != nullptr) dlclose(handle_);
}

void* Library::symbol(const char* name) const {
  return handle_ != nullptr ? dlsym(handle_, name) : nullptr;
}

}  // namespace gpureap::backend::nvml

#include "http/http_client.h"

#include <dlfcn.h>

#include <mutex>

namespace gpureap::http {
namespace {

// The module's entry point, or why it could not be had. Loaded once and never unloaded: the
// clients it makes run its code for as long as they live.
core::Result<HttpModuleEntry> load_module() {
  // Found where the program's run path points (set by the build: the build folder, or the
  // installed program's library folder), or on LD_LIBRARY_PATH.
  void* handle = dlopen(kHttpModuleName, RTLD_NOW | RTLD_LOCAL);
  const char* error = handle != nullptr ? nullptr : dlerror();
  void* entry = handle != nullptr ? dlsym(handle, kHttpModuleEntry) : nullptr;
  if (handle != nullptr && entry == nullptr) error = dlerror();
  if (entry == nullptr)
    return core::Error{std::string("gpureap's HTTP module could not be loaded: ") +
                           (error != nullptr ? error : kHttpModuleName),
                       std::string("reinstall gpureap: ") + kHttpModuleName +
                           " belongs in the program's library folder, lib/gpureap/modules"};
  return reinterpret_cast<HttpModuleEntry>(entry);
}

}  // namespace

core::Result<std::unique_ptr<HttpClient>> open_http_client(const std::string& origin,
                                                           const HttpOptions& options) {
  static std::once_flag once;
  static std::optional<core::Result<HttpModuleEntry>> module;
  std::call_once(once, [] { module.emplace(load_module()); });
  if (!*module) return module->error();
  return std::unique_ptr<HttpClient>(module->value()(origin, options));
}

}  // namespace gpureap::http

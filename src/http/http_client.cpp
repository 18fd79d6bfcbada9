#include "http/http_client.h"

#include <dlfcn.h>

#include <filesystem>
#include <mutex>
#include <string>
#include <system_error>
#include <vector>

#ifndef GPUREAP_HTTP_MODULE_FROM_BIN
#error "GPUREAP_HTTP_MODULE_FROM_BIN must name the module's folder relative to the program's"
#endif

namespace gpureap::http {
namespace {

// Where the module may be, first found wins: the installed program's library folder, beside
// the program (the build folder), then the dynamic linker's search (LD_LIBRARY_PATH, the run
// path of a program that names one: the tests). By the program's own path, not a run path of
// the program's: that would send each library it links through these folders at every start.
std::vector<std::string> module_candidates() {
  std::vector<std::string> candidates;
  std::error_code error;
  const auto program = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error) {
    const auto folder = program.parent_path();
    candidates.push_back(folder / GPUREAP_HTTP_MODULE_FROM_BIN / kHttpModuleName);
    candidates.push_back(folder / kHttpModuleName);
  }
  candidates.push_back(kHttpModuleName);
  return candidates;
}

// The module's entry point, or why it could not be had. Loaded once and never unloaded: the
// clients it makes run its code for as long as they live.
core::Result<HttpModuleEntry> load_module() {
  std::string why;
  for (const std::string& candidate : module_candidates()) {
    // RTLD_LOCAL: the module's libraries (OpenSSL, zlib) interpose on nothing of the program's.
    void* handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* error = dlerror();
      if (why.empty() && error != nullptr) why = error;
      continue;
    }
    if (void* entry = dlsym(handle, kHttpModuleEntry))
      return reinterpret_cast<HttpModuleEntry>(entry);
    const char* error = dlerror();
    return core::Error{std::string("gpureap's HTTP module ") + candidate +
                           " is not this build's: " + (error != nullptr ? error : kHttpModuleEntry),
                       "reinstall gpureap"};
  }
  return core::Error{"gpureap's HTTP module could not be loaded: " + why,
                     std::string("reinstall gpureap: ") + kHttpModuleName +
                         " belongs in the program's library folder, lib/gpureap/modules"};
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

#include "backend/nvml/library.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "procfs/resource_shortage.h"

namespace gpureap::backend::nvml {
namespace {

constexpr const char* kDefaultNames[] = {"libnvidia-ml.so.1", "libnvidia-ml.so"};

// Takes the message of the last failed dl call and releases glibc's per-thread record of it:
// a second dlerror() frees the record, so a watchdog thread that opened (or looked up in) NVML
// and then ends holds nothing of it, however its end races the process's exit.
std::string take_dlerror() {
  const char* text = dlerror();
  std::string message = text != nullptr ? text : "unknown dlopen error";
  dlerror();
  return message;
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

// Whether gpureap had no descriptor left to open the library (EMFILE: its own limit; ENFILE:
// the system's). 0: it had one. See loader_descriptor_shortage() for the loader's word; a
// descriptor asked for now is the kernel's (a path-only open needs no permission), but only
// while no other thread has closed one since.
int descriptor_shortage(const std::string& dl_error) {
  if (int err = loader_descriptor_shortage(dl_error)) return err;
  int fd = ::open("/", O_PATH | O_CLOEXEC);
  if (fd >= 0) {
    ::close(fd);
    return 0;
  }
  return errno == EMFILE || errno == ENFILE ? errno : 0;
}

// The library could not be loaded for want of a descriptor: that, and how to raise the limit,
// never "install the driver" or "check the path".
core::Error shortage_error(const std::string& name, const std::string& dl_error, int err) {
  const std::string want = err == ENFILE ? "the system's table of open files was full"
                                         : "gpureap had no file descriptor to open it";
  return core::Error{name + " could not be loaded: " + want + " (" + std::strerror(err) +
                         "; the loader said: " + dl_error + ")",
                     procfs::shortage_remedy(err), err};
}

}  // namespace

int loader_descriptor_shortage(const std::string& dl_error) {
  for (int err : {EMFILE, ENFILE}) {
    const std::string tail = std::string(": ") + std::strerror(err);
    if (dl_error.size() > tail.size() &&
        dl_error.compare(dl_error.size() - tail.size(), tail.size(), tail) == 0) {
      return err;
    }
  }
  return 0;
}

core::Result<Library> Library::open(const std::optional<std::string>& path) {
  // RTLD_LOCAL: NVML's symbols must not interpose on anything else in the process.
  constexpr int kFlags = RTLD_NOW | RTLD_LOCAL;
  if (path && !path->empty()) {
    void* handle = dlopen(path->c_str(), kFlags);
    if (handle == nullptr) {
      std::string error = take_dlerror();
      if (int err = descriptor_shortage(error)) return shortage_error(*path, error, err);
      return core::Error{*path + " could not be loaded: " + error,
                         "check the path given with --nvml-library or GPUREAP_NVML_LIBRARY"};
    }
    return Library(handle, loaded_path(handle, *path));
  }
  std::string first_error;
  for (const char* name : kDefaultNames) {
    if (void* handle = dlopen(name, kFlags)) return Library(handle, loaded_path(handle, name));
    std::string error = take_dlerror();
    if (int err = descriptor_shortage(error)) return shortage_error(name, error, err);
    if (first_error.empty()) first_error = std::move(error);
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
  if (handle_ == nullptr) return nullptr;
  void* address = dlsym(handle_, name);
  // An optional entry point an older driver lacks is not an error; release its record.
  if (address == nullptr) take_dlerror();
  return address;
}

}  // namespace gpureap::backend::nvml

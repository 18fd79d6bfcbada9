#pragma once
// Owns the dlopen handle of libnvidia-ml. NVML is opened at run time so gpureap builds and
// runs on machines without the NVIDIA driver, and so tests can point it at a test double.
#include <optional>
#include <string>
#include <utility>

#include "core/result.h"

namespace gpureap::backend::nvml {

// EMFILE or ENFILE when the loader's message (dlerror()) says it failed for want of a file
// descriptor, else 0. The loader says "cannot open shared object file" alike for a file that is
// missing and for one it had no descriptor to open, and it leaves errno as it found it: only
// the tail of its message, the system's text for the error of its open(), tells them apart.
// The tail comes after the file's name, so no name can put it there.
int loader_descriptor_shortage(const std::string& dl_error);

class Library {
 public:
  // `path` set: exactly that file. Otherwise the loader's search for libnvidia-ml.so.1,
  // then libnvidia-ml.so (the unversioned name exists only with development packages).
  static core::Result<Library> open(const std::optional<std::string>& path);

  Library(Library&& other) noexcept;
  Library& operator=(Library&& other) noexcept;
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;
  ~Library();

  void* symbol(const char* name) const;
  // The file actually loaded (the loader's resolved path when it can tell), for reports.
  const std::string& path() const { return path_; }

 private:
  Library(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}

  void* handle_ = nullptr;
  std::string path_;
};

}  // namespace gpureap::backend::nvml

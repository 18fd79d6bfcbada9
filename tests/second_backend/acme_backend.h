#pragma once
// A second, non-NVIDIA backend, as a vendor's folder under src/backend would be: it reports one
// "acme" GPU reached through a DRM render node, takes part in the holder scan through the
// per-fd hook (reading each holder's fdinfo, as a DRM backend does), and lists the processes
// its driver would; its kernel log has error codes of its own (acme_kernel_log). It proves that
// adding a vendor is this folder and one registry entry.
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "backend/gpu_backend.h"
#include "backend/registry.h"

namespace gpureap::testing {

struct AcmeListing {
  pid_t pid = 0;
  uint64_t used_bytes = 0;
};

class AcmeBackend final : public backend::GpuBackend, public procfs::FdObserver {
 public:
  // The render node's minor (renderD<minor>) and what the driver lists on the GPU.
  AcmeBackend(unsigned render_minor, std::vector<AcmeListing> listings);

  core::BackendReport collect() override;
  procfs::FdObserver* fd_observer() override { return this; }

  void scan_started() override;
  void observe(const procfs::GpuFd& fd) override;
  void scan_finished() override;

 private:
  dev_t render_;
  std::vector<AcmeListing> listings_;
  std::mutex mutex_;
  // (pid, thread, fd) of the render node's holders: a thread's own table apart (GpuFd::thread).
  std::set<std::tuple<pid_t, pid_t, int>> scanning_, scanned_;
  size_t fdinfo_read_ = 0, fdinfo_scanned_ = 0;  // fdinfo files that said "pos:"
};

// The registry entry, with its kernel-log parser: one line beside the built-in backends.
backend::BackendEntry acme_entry(unsigned render_minor, std::vector<AcmeListing> listings);

}  // namespace gpureap::testing

#pragma once
// Collects one Snapshot: /proc (every process, the fd holder scan, details for the rows that
// will be shown) and the GPU backend, then joins them.
#include <memory>
#include <string>

#include "backend/gpu_backend.h"
#include "core/result.h"
#include "core/snapshot.h"
#include "procfs/device_files.h"
#include "procfs/proc_fs.h"

namespace gpureap::collect {

struct Roots {
  std::string proc_root = "/proc";
  std::string dev_root = "/dev";
};

class Collector {
 public:
  // Fails (with a message naming the root and what to do) when a root is unusable.
  static core::Result<Collector> open(const Roots& roots,
                                      std::shared_ptr<backend::GpuBackend> backend);

  // /proc alone: every process with its GPU device-file holds; details for holders.
  core::ProcView scan_processes() const;
  core::Snapshot collect() const;

  const procfs::ProcFs& procfs() const { return proc_; }

 private:
  Collector(procfs::ProcFs proc, procfs::DeviceCatalog catalog,
            std::shared_ptr<backend::GpuBackend> backend)
      : proc_(std::move(proc)), catalog_(std::move(catalog)), backend_(std::move(backend)) {}
  void add_details(core::ProcView& view, const std::vector<pid_t>& pids) const;

  procfs::ProcFs proc_;
  procfs::DeviceCatalog catalog_;
  std::shared_ptr<backend::GpuBackend> backend_;
};

}  // namespace gpureap::collect

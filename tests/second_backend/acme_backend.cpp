#include "acme_backend.h"

#include <fcntl.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <string>

#include "acme_kernel_log.h"

namespace gpureap::testing {
namespace {

constexpr unsigned kDrmMajor = 226;
constexpr uint64_t kAcmeBoardBytes = 16ull << 30;  // 16 GiB

// /proc/PID/fdinfo/FD names the file's position for every file: a DRM driver adds its own keys.
// A thread's own fd table (or the process's, where its main thread has exited) is read through
// /proc/PID/task/TID: GpuFd says where.
bool fdinfo_readable(const procfs::GpuFd& fd) {
  int f = ::openat(fd.proc_dirfd, fd.fdinfo_path().c_str(), O_RDONLY | O_CLOEXEC);
  if (f < 0) return false;
  char buf[512];
  ssize_t n = ::read(f, buf, sizeof buf - 1);
  ::close(f);
  return n > 0 && std::string(buf, static_cast<size_t>(n)).find("pos:") != std::string::npos;
}

}  // namespace

AcmeBackend::AcmeBackend(unsigned render_minor, std::vector<AcmeListing> listings)
    : render_(::makedev(kDrmMajor, render_minor)), listings_(std::move(listings)) {}

core::BackendReport AcmeBackend::collect() {
  core::BackendReport report;
  report.name = "acme";
  report.vendor = "acme";
  report.available = true;
  report.driver_version = "1.2.3";
  core::Gpu gpu;
  gpu.index = 0;  // the backend's own numbering
  gpu.name = "Acme A1";
  gpu.pci_bus_id = "0000:c1:00.0";
  gpu.device_numbers = {render_};
  gpu.memory.total_bytes = kAcmeBoardBytes;
  uint64_t used = 0;
  for (const auto& l : listings_) {
    core::DriverProcess p;
    p.pid = l.pid;
    p.used_bytes = l.used_bytes;
    used += l.used_bytes;
    gpu.processes.push_back(p);
  }
  gpu.memory.used_bytes = used;
  report.gpus.push_back(std::move(gpu));
  std::lock_guard lock(mutex_);
  report.set_detail("acme_render_holders", std::to_string(scanned_.size()));
  report.set_detail("acme_fdinfo_read", std::to_string(fdinfo_scanned_));
  return report;
}

void AcmeBackend::scan_started() {
  std::lock_guard lock(mutex_);
  scanning_.clear();
  fdinfo_read_ = 0;
}

void AcmeBackend::observe(const procfs::GpuFd& fd) {
  if (fd.file.number() != render_) return;
  bool fdinfo = fdinfo_readable(fd);
  std::lock_guard lock(mutex_);
  scanning_.insert({fd.pid, fd.thread, fd.fd});
  fdinfo_read_ += fdinfo;
}

void AcmeBackend::scan_finished() {
  std::lock_guard lock(mutex_);
  scanned_ = scanning_;
  fdinfo_scanned_ = fdinfo_read_;
}

backend::BackendEntry acme_entry(unsigned render_minor, std::vector<AcmeListing> listings) {
  backend::BackendEntry e{"acme", "acme", false,
                          [render_minor, listings](const backend::BackendSettings&) {
                            return std::make_unique<AcmeBackend>(render_minor, listings);
                          }};
  e.kernel_log = acme_kernel_log();
  return e;
}

}  // namespace gpureap::testing

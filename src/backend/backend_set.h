#pragma once
// The backends one collector reads, each with its own availability: a wedged driver does not
// hide another vendor's GPUs. Backends that call a driver library run behind their
// own watchdog; the others (which may also take part in the holder scan) are called directly.
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "backend/registry.h"
#include "backend/watchdog.h"
#include "core/gpu.h"

namespace gpureap::backend {

class BackendSet {
 public:
  // Made from a registry: one instance of each entry (a guarded one makes a fresh instance
  // whenever its watchdog abandons a stuck call).
  static std::shared_ptr<BackendSet> make(const Registry& registry, const BackendSettings& settings,
                                          WatchdogOptions watchdog);
  // Backends as they are, none guarded (a program that wants no watchdog, tests' backends);
  // the device nodes and kernel-log parsers are the built-in registry's.
  explicit BackendSet(std::vector<std::shared_ptr<GpuBackend>> backends);
  BackendSet();

  // What the registry's entries (and the built-in ones) say of their vendors, for the layers
  // below the backends: the device nodes the holder scan matches, the kernel log's parsers, the
  // drivers' kernel functions.
  const procfs::DeviceNodes& device_nodes() const { return nodes_; }
  const kernel::KernelLogParsers& kernel_log_parsers() const { return parsers_; }
  const std::vector<std::string>& kernel_functions() const { return functions_; }
  // The programs that run other processes' GPU work, by backend name (BackendEntry).
  const std::vector<std::pair<std::string, WorkServer>>& work_servers() const {
    return work_servers_;
  }

  // Every backend's report now, combined (global GPU indices, keys). A backend that goes down
  // keeps the indices it had, so the next backends' GPUs keep theirs, and reports the GPUs its
  // kernel module still describes (BackendEntry::kernel_gpus). With no backend at all, one
  // unavailable status says so.
  core::DriverReading read() const;
  // read(), with `meanwhile` (the holder scan) run on this thread beside the backends that take
  // no part in it: a driver's library answers while /proc is scanned (a vendor library's init alone
  // can take tens of milliseconds). The backends that observe the scan's fds are read after it, as
  // their reports need it.
  core::DriverReading read_beside(const std::function<void()>& meanwhile) const;
  // The observers of the backends that take part in the holder scan.
  std::vector<procfs::FdObserver*> fd_observers() const;

  // For the guarded backends, from any thread:
  void set_timeout(std::chrono::milliseconds timeout);
  void interrupt();  // a read waiting for a driver returns at once; later ones do not call it
  // How long the longest-silent driver has not answered; empty while every one answers.
  std::optional<std::chrono::steady_clock::duration> down_for() const;
  // A thread is still blocked in a driver: the program should leave with _exit.
  bool threads_stuck() const;

 private:
  struct Member {
    std::shared_ptr<GpuBackend> backend;
    std::shared_ptr<GuardedBackend> guarded;              // the same object, when it is guarded
    std::function<std::vector<core::Gpu>()> kernel_gpus;  // BackendEntry::kernel_gpus, bound
  };
  static core::BackendReport read_member(const Member& m);
  std::vector<Member> members_;
  procfs::DeviceNodes nodes_;
  kernel::KernelLogParsers parsers_;
  std::vector<std::string> functions_;
  std::vector<std::pair<std::string, WorkServer>> work_servers_;
  mutable std::mutex widths_mutex_;
  mutable std::vector<unsigned> widths_;  // per member: the most GPU ids it has used
};

}  // namespace gpureap::backend

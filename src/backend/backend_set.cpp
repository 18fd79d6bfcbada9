#include "backend/backend_set.h"

#include <algorithm>
#include <thread>

namespace gpureap::backend {

std::shared_ptr<BackendSet> BackendSet::make(const Registry& registry,
                                             const BackendSettings& settings,
                                             WatchdogOptions watchdog) {
  auto set = std::make_shared<BackendSet>();
  // What /proc and the kernel log are read for does not depend on which backends are read:
  // every vendor gpureap knows, the registry's own entries first.
  Registry known = registry;
  known.insert(known.end(), builtin_backends().begin(), builtin_backends().end());
  set->nodes_ = backend::device_nodes(known);
  set->parsers_ = backend::kernel_log_parsers(known);
  set->functions_ = backend::kernel_functions(known);
  set->work_servers_ = backend::work_servers(known);
  for (const auto& entry : registry) {
    std::function<std::vector<core::Gpu>()> kernel_gpus;
    if (entry.kernel_gpus) kernel_gpus = [f = entry.kernel_gpus, settings] { return f(settings); };
    if (!entry.calls_driver_library) {
      set->members_.push_back({entry.make(settings), nullptr, std::move(kernel_gpus)});
      continue;
    }
    WatchdogOptions options = watchdog;
    options.backend_name = entry.name;
    options.vendor = entry.vendor;
    options.check_driver = entry.words.check_driver;
    auto guarded = std::make_shared<GuardedBackend>(
        [make = entry.make, settings] { return std::shared_ptr<GpuBackend>(make(settings)); },
        std::move(options));
    set->members_.push_back({guarded, guarded, std::move(kernel_gpus)});
  }
  return set;
}

BackendSet::BackendSet()
    : nodes_(backend::device_nodes(builtin_backends())),
      parsers_(backend::kernel_log_parsers(builtin_backends())),
      functions_(backend::kernel_functions(builtin_backends())),
      work_servers_(backend::work_servers(builtin_backends())) {}

BackendSet::BackendSet(std::vector<std::shared_ptr<GpuBackend>> backends) : BackendSet() {
  for (auto& b : backends)
    if (b) members_.push_back({std::move(b), nullptr});
}

core::BackendReport BackendSet::read_member(const Member& m) {
  core::BackendReport r = m.backend->collect();
  if (!r.available && r.gpus.empty() && m.kernel_gpus) r.gpus = m.kernel_gpus();
  return r;
}

core::DriverReading BackendSet::read() const {
  return read_beside({});
}

core::DriverReading BackendSet::read_beside(const std::function<void()>& meanwhile) const {
  std::vector<core::BackendReport> reports(members_.size());
  std::vector<bool> read(members_.size(), false);
  if (meanwhile) {
    std::thread beside([&] {
      for (size_t i = 0; i < members_.size(); ++i)
        if (members_[i].backend->fd_observer() == nullptr) {
          reports[i] = read_member(members_[i]);
          read[i] = true;
        }
    });
    try {
      meanwhile();
    } catch (...) {
      beside.join();
      throw;
    }
    beside.join();
  }
  for (size_t i = 0; i < members_.size(); ++i)
    if (!read[i]) reports[i] = read_member(members_[i]);
  if (reports.empty()) {
    core::BackendReport none;
    none.name = "none";
    none.error = "no GPU backend configured";
    none.error_code = core::BackendErrorCode::NotConfigured;
    reports.push_back(std::move(none));
  }
  std::vector<unsigned> widths;
  {
    std::lock_guard lock(widths_mutex_);
    widths_.resize(reports.size(), 0);
    for (size_t i = 0; i < reports.size(); ++i)
      for (const auto& g : reports[i].gpus) widths_[i] = std::max(widths_[i], g.index + 1);
    widths = widths_;
  }
  return core::combine(std::move(reports), widths);
}

std::vector<procfs::FdObserver*> BackendSet::fd_observers() const {
  std::vector<procfs::FdObserver*> out;
  for (const auto& m : members_)
    if (auto* o = m.backend->fd_observer()) out.push_back(o);
  return out;
}

void BackendSet::set_timeout(std::chrono::milliseconds timeout) {
  for (const auto& m : members_)
    if (m.guarded) m.guarded->set_timeout(timeout);
}

void BackendSet::interrupt() {
  for (const auto& m : members_)
    if (m.guarded) m.guarded->interrupt();
}

std::optional<std::chrono::steady_clock::duration> BackendSet::down_for() const {
  std::optional<std::chrono::steady_clock::duration> longest;
  for (const auto& m : members_) {
    if (!m.guarded) continue;
    if (auto d = m.guarded->down_for(); d && (!longest || *d > *longest)) longest = d;
  }
  return longest;
}

bool BackendSet::threads_stuck() const {
  for (const auto& m : members_)
    if (m.guarded && m.guarded->threads_stuck()) return true;
  return false;
}

}  // namespace gpureap::backend

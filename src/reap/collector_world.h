#pragma once
// The world of a collector: its procfs for the processes, its drivers for the polls, a full
// collection at the end. Kill, doctor --fix, top and the policy actions reap through it.
#include <memory>

#include "collect/collector.h"
#include "reap/world.h"

namespace gpureap::reap {

class CollectorWorld final : public World {
 public:
  // The collector must outlive the world.
  explicit CollectorWorld(const collect::Collector& collector)
      : collector_(collector), probe_(collector.procfs()) {}
  // Shares the collector: a reap on a thread of its own keeps it alive.
  explicit CollectorWorld(std::shared_ptr<const collect::Collector> collector)
      : owned_(std::move(collector)), collector_(*owned_), probe_(collector_.procfs()) {}
  CollectorWorld(const CollectorWorld&) = delete;
  CollectorWorld& operator=(const CollectorWorld&) = delete;

  core::Result<std::optional<core::ProcessStat>> stat(pid_t pid) const override {
    return probe_.stat(pid);
  }
  std::optional<core::ProcessDetails> details(pid_t pid, bool want_wchan) const override {
    return probe_.details(pid, want_wchan);
  }
  bool signals_reach() const override;
  std::string proc_root() const override;
  std::optional<pid_t> thread_group_of(pid_t tid) const override;
  core::Snapshot driver_view() const override;
  core::Snapshot collect() const override;

 private:
  std::shared_ptr<const collect::Collector> owned_;
  const collect::Collector& collector_;
  ProcFsProbe probe_;
};

}  // namespace gpureap::reap

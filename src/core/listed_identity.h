#pragma once
// Whose is a PID the driver lists. A PID is a number anyone can be handed again (pid_max is 32768
// on many hosts, and a user can cycle PIDs until one lands on a number), so the process that has
// the number now is the listed one only when the kernel vouches for it: it holds a device file of
// a GPU that lists it (a client of a server of other processes' work is vouched for by its
// verified, live server), and it did not start after the daemon first saw the listing. Otherwise
// the listing is a gone context, and the process that now has the number is never charged,
// planned or blamed for it.
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "core/snapshot.h"

namespace gpureap::core {

class ListedIdentities {
 public:
  ListedIdentities(const ProcView& proc, const DriverReading& drivers);

  // The live process the driver's listing of `pid` belongs to; null when the listed process is
  // gone: absent, a zombie, or the number is another process's now (reused()).
  const HostProcess* owner(pid_t pid) const;
  // Set when a live process has the listed number but is not the listed process.
  const ReusedPid* reused(pid_t pid) const;

 private:
  std::map<pid_t, const HostProcess*> owners_;
  std::map<pid_t, ReusedPid> reused_;
};

// How a person reads ReusedPid::Why: "holds no device file of its GPUs".
std::string describe(const ReusedPid& r);

}  // namespace gpureap::core

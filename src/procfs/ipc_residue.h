#pragma once
// Candidates for host-memory leftovers of killed jobs: System V shared-memory segments nobody is
// attached to whose creator and last user are gone, and files in /dev/shm that no live process
// holds open or maps, with what the kernel tells of who made them (the segment's key, the
// file's owner and whether that owner still runs a process). Which of them a job left behind is
// doctor's to judge (doctor/ipc_rules): a file nobody uses now may be kept on purpose.
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "procfs/proc_fs.h"

namespace gpureap::procfs {

struct SysvShmSegment {
  long long key = 0;
  long long shmid = 0;
  uint64_t size_bytes = 0;
  pid_t creator_pid = 0;
  pid_t last_pid = 0;  // last shmat/shmdt; 0 when never attached
  unsigned long attached = 0;
  uid_t uid = 0;
};

struct ShmFile {
  std::string path;
  uint64_t size_bytes = 0;
  uid_t uid = 0;
  // A live process runs as the file's owner (its real or effective uid).
  bool owner_runs = true;
};

struct IpcResidue {
  std::vector<SysvShmSegment> segments;
  std::vector<ShmFile> files;
  // Processes whose fds or maps could not be read: they may use a file reported here.
  std::vector<pid_t> uninspected;
};

// /proc/sysvipc/shm, header line skipped; malformed lines are ignored.
std::vector<SysvShmSegment> parse_sysvipc_shm(std::string_view text);

// Residue as seen now. `live` must be sorted. Files changed in the last `min_age_s` seconds
// are left out: a job may be between creating a file and mapping it.
IpcResidue find_ipc_residue(const ProcFs& proc, const std::string& dev_root,
                            const std::vector<pid_t>& live, long min_age_s = 60);

}  // namespace gpureap::procfs

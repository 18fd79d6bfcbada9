#pragma once
// What the kernel log says about GPUs, in terms no vendor owns: a driver's error record tied to
// a GPU (each vendor's parser, in src/kernel/<vendor>, gives its codes a kind), and whether the
// log could be read at all. Filled by whoever reads the log (doctor, ps, the daemon's follower),
// never by every collection: the log can be megabytes.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpureap::core {

// A severity as the driver vendor's documentation ranks an error, before doctor words it.
enum class KernelEventLevel { Info, Warning, Critical };
const char* to_string(KernelEventLevel level);  // "info", ... (text/enum_names.h)

// What a record's stamp (microseconds since boot) says of when it was written. A record of this
// boot was written after the boot and before it was read; one stamped later than it was read is
// from another boot (a saved log) or forged, and names no process of this one.
enum class KernelStamp {
  Unknown,   // no clock time: the boot time is unknown, or the stamp is past any clock
  ThisBoot,  // between the boot and the reading
  Future,    // later than the reading
};
const char* to_string(KernelStamp stamp);  // "unknown", "this_boot", "future"

struct KernelGpuEvent {
  std::string vendor;  // the vendor of the parser that read it
  std::string kind;    // the parser's kind: its machine name, as metrics and JSON carry it
  std::string label;   // the kind as people write it (the parser's label): "<label> <code>"
  unsigned code = 0;   // the vendor's number for the error
  // The PCI address the driver printed, as "dddd:bb:dd" in lower case (no function).
  std::string pci_address;
  std::optional<unsigned> gpu;  // the GPU's global index, when a backend reports that address
  uint64_t seq = 0;             // the kernel's record number
  uint64_t since_boot_usec = 0;
  std::optional<std::chrono::system_clock::time_point> time;  // since_boot + boot time
  KernelStamp stamp = KernelStamp::Unknown;                   // whether `time` can be true
  std::optional<pid_t> pid;                                   // the process the driver named
  std::optional<std::string> process_name;
  std::string detail;  // the rest of the driver's text (untrusted)
  // From the vendor's catalog (src/kernel): unknown codes are kept, with no name.
  std::optional<std::string> name;
  KernelEventLevel level = KernelEventLevel::Warning;
  bool needs_reboot = false;  // only a reboot brings the GPU back (its catalogue says so)

  // The kind as people write it (its label, else its name), and "<label> <code>": the way the
  // vendor's documentation names the error.
  const std::string& kind_text() const { return label.empty() ? kind : label; }
  std::string code_text() const { return kind_text() + " " + std::to_string(code); }
};

// How many events of one code a GPU logged, and when the last one was (the daemon's counters).
struct KernelEventCount {
  std::string pci_address;
  std::optional<unsigned> gpu;  // as the last event was matched
  std::string kind;             // the parser's kind (KernelGpuEvent::kind)
  unsigned code = 0;
  uint64_t events = 0;
  std::optional<std::chrono::system_clock::time_point> last_time;
  std::string vendor;  // the vendor of the parser that read them
  // The parser's earlier name for its kind's metrics (KernelLogParser::metric_alias): the counts
  // are exported under it too, for one release. Empty: none.
  std::string metric_alias;
};

// A process the kernel's OOM killer killed, from its own record (facility 0, its words at the
// start): "Out of memory: Killed process 1234 (python3) total-vm:..., UID:1000 ...", or the
// memory cgroup's "Memory cgroup out of memory: Killed process ...". The PID names a process
// only if that process started before the record (DESIGN: a PID in a log line).
struct OomKill {
  pid_t pid = 0;
  std::string name;  // its comm as the kernel printed it (the process's own text)
  std::optional<uid_t> uid;
  bool memory_cgroup = false;  // a cgroup's limit was reached, not the machine's memory
  uint64_t seq = 0;
  uint64_t since_boot_usec = 0;
  std::string text;  // the record's text (untrusted), for evidence
  bool operator==(const OomKill&) const = default;
};

struct KernelLog {
  bool read = false;                   // the log was opened and read
  std::optional<std::string> problem;  // why not, or what went wrong part-way (for the user)
  std::vector<KernelGpuEvent> events;  // oldest first
  std::vector<OomKill> oom_kills;      // oldest first
  uint64_t records = 0;                // records read
  uint64_t malformed = 0;              // lines that were not records (skipped)
};

}  // namespace gpureap::core

namespace gpureap::core {

// Why a process in uninterruptible sleep (D) is stuck, as far as the kernel shows it.
enum class BlockedOn { Unknown, Fuse, Nfs, GpuDriver };

struct FuseConnection {
  unsigned id = 0;  // /sys/fs/fuse/connections/<id>: the minor of the mount's device
  std::string mount_point;
  std::string fs_type;  // "fuse.sshfs"
  std::string source;
  std::optional<uint64_t> waiting;  // requests the daemon has not answered
};

struct NfsMount {
  std::string mount_point;
  std::string fs_type;  // nfs, nfs4
  std::string server;   // "fileserver" of "fileserver:/export"
  std::string source;
};

struct BlockedTask {
  pid_t pid = 0;
  std::optional<std::string> wchan;
  std::vector<std::string> stack;            // /proc/PID/stack, function names (root only)
  std::optional<std::string> stack_problem;  // why the stack is missing
  BlockedOn on = BlockedOn::Unknown;
  std::vector<FuseConnection> fuse;  // the FUSE mounts it may wait on (Fuse)
  std::vector<NfsMount> nfs;         // the NFS mounts it may wait on (Nfs)
};

}  // namespace gpureap::core

#pragma once
// What /proc tells about one process. Fields a collector could not read stay empty
// (std::optional), never a made-up value.
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/rank_labels.h"
#include "core/shared_value.h"

namespace gpureap::core {

// The parts of /proc/PID/stat every consumer needs; read for every process.
struct ProcessStat {
  pid_t pid = 0;
  std::string comm;
  char state = '?';  // kernel state letter: R S D T t Z X I ...
  pid_t ppid = 0;
  pid_t pgid = 0;
  pid_t sid = 0;
  unsigned flags = 0;        // PF_* of the task that stands for the process (see leader_exited)
  uint64_t start_ticks = 0;  // clock ticks since boot
  long num_threads = 0;
  long rss_pages = 0;
  uint64_t cpu_ticks = 0;  // utime + stime: CPU time used so far, user and kernel
  // Its main thread has exited while another thread runs on (pthread_exit() in main; see
  // procfs/thread_group.h): the leader is a zombie in do_exit(), so state, rss_pages and flags
  // are that live thread's, and the fd table and memory map are read through it. Identity
  // (PID, start time, parent, group) and the figures of the whole group stay the leader's.
  // False for a true zombie: no thread of it runs.
  bool leader_exited = false;
  // A zombie's wait status, as waitpid(2) would give it to its parent (field 52, exit_code,
  // Linux 3.5 and later): the kernel's word on how the process ended, kept until the parent
  // reaps it. Empty for a process that is not a zombie, and where the field is missing. The
  // kernel writes 0 where the reader may not trace the process (another user's, without
  // privilege), so 0 is no proof of a clean exit; a nonzero status is always the kernel's.
  std::optional<int> wait_status;

  bool is_kernel_thread() const;  // PF_KTHREAD
  bool is_zombie() const { return state == 'Z'; }
  // PF_EXITING (include/linux/sched.h): in do_exit(). Its files and memory may be gone already;
  // a zombie, or gone, by the next read. The flag of the task that stands for the process: a
  // process whose leader alone has exited is not ending (leader_exited says that).
  bool is_exiting() const { return (flags & 0x00000004u) != 0; }
  bool is_stopped() const { return state == 'T' || state == 't'; }
};

// Whether `parent`, read as the process `child`'s ppid names, can be its parent. A parent,
// first or adoptive (a subreaper, init: an ancestor), always started no later than its child;
// one that started after it holds a number the child's parent had when /proc was read, reused
// since (/proc is not read at one instant): no relation, however the numbers match.
inline bool could_be_parent(const ProcessStat& parent, const ProcessStat& child) {
  return parent.pid == child.ppid && parent.start_ticks <= child.start_ticks;
}

struct ContainerInfo {
  std::string runtime;  // docker, containerd, cri-o, podman, kubernetes
  std::optional<std::string> id;
  std::optional<std::string> pod_uid;
  // Names from the runtime's own state files or the kubelet's pod directory, where they could
  // be read (procfs/container_names); the cgroup path gives only the ids above.
  std::optional<std::string> name;           // docker's or podman's name; the pod's container
  std::optional<std::string> pod_name;       // Kubernetes metadata.name
  std::optional<std::string> pod_namespace;  // Kubernetes metadata.namespace
  // Where /proc/PID/cgroup puts it: the hierarchy ("" on cgroup v2, else the v1 controllers or
  // "name=systemd") and the cgroup whose name gives the ids above, from the hierarchy's root
  // as the reader's cgroup namespace sees it. Empty cgroup: the file did not locate one.
  std::string hierarchy;
  std::string cgroup;
  // The ids are a cgroup's name, which anyone with a delegated cgroup subtree can choose
  // (every logged-in user has one). The collector checks the claim against what the kernel
  // and the runtime's state say (collect/container_claims): only a verified container is
  // named, charged to a pod, matched by a policy and stopped by a remedy.
  bool verified = false;
  std::string verification;  // how it was verified, or why not; empty: not checked
  bool operator==(const ContainerInfo&) const = default;

  // How a person names it, unescaped: "namespace/pod" in Kubernetes, "docker:trainer" where
  // the runtime named it, else the runtime and a short id ("containerd:3f4e5d6c7b8a"). An
  // unverified claim reads "unverified docker:3f4e5d6c7b8a", and never shows a name.
  std::string display_name() const;
};

// A GPU device file held open by a process, with the fd numbers that hold it. A file that
// reaches one GPU has one hold per open file description (fds dup'd or inherited together).
struct Gpu;

struct DeviceHold {
  std::string path;  // as enumerated under the dev root, e.g. /dev/dri/renderD128
  std::string kind;  // the device node's kind in the backends' registry: drm-render, ...
  // The device number the file stands for (st_rdev; for a stand-in file, the number its name
  // gives under the driver's conventions). Empty when unknown.
  std::optional<dev_t> device;
  // The file reaches GPUs (a GPU's own node, a DRM node), not a driver's control file.
  bool gpu_file = false;
  std::vector<int> fds;
  // The open file description: "PID:FD" of the lowest PID (then fd) holding it, the same in
  // every process that shares it. Empty when it could not be compared (see ProcView).
  std::optional<std::string> open_file;
  // The thread whose fd table of its own holds these fds (it called unshare(CLONE_FILES), so
  // /proc/PID/fd, the leader's table, lacks them); 0: the process's table. A thread's id
  // names where the fds are; what is signalled is always the process.
  pid_t thread = 0;

  // Through this file a process reaches `gpu`: its number is one of the GPU's, or, when the
  // backend could not say which files reach the GPU, it is a GPU file of the GPU's major.
  bool reaches(const Gpu& gpu) const;
  // It reaches `gpu` through a file that can keep a context the GPU's driver lists: not only
  // through a display driver's node (Gpu::display_device_numbers).
  bool may_keep_context(const Gpu& gpu) const;
};

// The program a process runs (/proc/PID/exe).
struct ExecutableFile {
  std::string path;  // as the process's mount namespace names it (" (deleted)" removed)
  // Owned by root and writable by nobody else, in a directory of the same kind (seen through
  // /proc/PID/root), run from gpureap's user namespace: a file no unprivileged user can have
  // made, renamed, linked or bind-mounted there.
  bool system_installed = false;
};

// Details read only for the processes a consumer shows (holders, listed PIDs, their kin).
struct ProcessDetails {
  std::vector<std::string> cmdline;
  std::optional<uid_t> uid;   // real
  std::optional<uid_t> euid;  // effective
  std::optional<std::string> user;
  std::vector<pid_t> ns_pids;  // NSpid: outermost (procfs mount's namespace) first
  std::optional<ContainerInfo> container;
  std::optional<std::string> wchan;   // only read for D state
  std::optional<ExecutableFile> exe;  // empty: not readable (another user's, without privilege)
  // A distributed job's labels from its environment: read for GPU-file holders and their
  // launcher's other children (collect/rank_labels); a claim, never membership.
  std::optional<RankLabels> rank_labels;
};

struct HostProcess {
  ProcessStat stat;
  SharedValue<ProcessDetails> details;  // shared by the process's copies (core/shared_value.h)
  std::vector<DeviceHold> devices;
  bool fds_readable = true;  // false: no permission to read /proc/PID/fd

  bool holds_device() const { return !devices.empty(); }
  // Holds a file that reaches a GPU (DeviceHold::gpu_file), not only a driver's control file.
  bool holds_gpu_file() const;
  // Holds a file that reaches this GPU (DeviceHold::reaches).
  bool holds_gpu(const Gpu& gpu) const;
  bool is_live() const { return !stat.is_zombie(); }
  // The container it verifiably runs in: null outside one, and for a claim that failed
  // verification. Whatever charges, names, matches or stops a container asks this.
  const ContainerInfo* verified_container() const;
};

}  // namespace gpureap::core

#pragma once
// The DRM clients of this backend's GPUs, learnt from the holder scan: the scan hands over each
// DRM fd it matched, the table reads its fdinfo and groups fds by client. A client is one open
// DRM file (the kernel's struct drm_file): fds dup'd or inherited across fork share it, and its
// buffers, so it is kept once with every (PID, table, fd) that holds it. A thread that left its
// process's fd table (unshare(CLONE_FILES)) keeps the files it had there, and what it opens
// after is the process's too: its fdinfo is read through /proc/PID/task/TID. The driver's
// drm-client-id names a client; a kernel that prints none (amdgpu before 5.19) leaves the open
// file description itself, which the scan compares with kcmp, as the client; the two
// cross-check each other.
#include <sys/types.h>

#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "backend/drm/fdinfo.h"
#include "core/process.h"
#include "procfs/fd_observer.h"

namespace gpureap::backend::drm {

// The kinds of the DRM nodes (dri/renderD<N>, dri/card<N>) in the device catalogue.
inline constexpr const char* kDrmRenderKind = "drm-render";
inline constexpr const char* kDrmCardKind = "drm-card";
inline constexpr unsigned kDrmMajor = 226;

// One fd of a DRM node: the process, the table (a thread that unshare(CLONE_FILES)'d has one of
// its own, whose fd numbers are not the process's) and the number; and where its fdinfo is read.
struct FdRef {
  pid_t pid = 0;
  pid_t thread = 0;  // the thread whose own table holds it (DeviceHold::thread); 0: the process's
  int fd = 0;
  // The task through whose /proc entry its fdinfo is read (procfs::GpuFd::task): `thread`, or
  // for the process's table 0, or a live thread where the main thread has exited. Where it is
  // read is not what it is: left out of comparisons.
  pid_t task = 0;
  std::tuple<pid_t, pid_t, int> key() const { return {pid, thread, fd}; }
  bool operator==(const FdRef& o) const { return key() == o.key(); }
  auto operator<=>(const FdRef& o) const { return key() <=> o.key(); }
};

struct ObservedClient {
  DrmClient info;
  dev_t node = 0;          // the device number of the file the fds refer to
  std::vector<FdRef> fds;  // sorted; never empty; a process's threads' tables each apart
  pid_t first_pid() const { return fds.front().pid; }
};

class ClientTable final : public procfs::FdObserver {
 public:
  // The proc root is read again, between scans, to see which clients are still open.
  explicit ClientTable(const std::string& proc_root);
  ~ClientTable() override;
  ClientTable(const ClientTable&) = delete;
  ClientTable& operator=(const ClientTable&) = delete;

  // The device numbers of the nodes of this backend's GPUs: only their fds are read. Kept for
  // the next scans until set again.
  void watch(std::set<dev_t> nodes);

  void scan_started() override;
  void observe(const procfs::GpuFd& fd) override;
  void scan_finished() override;
  // The scan's open-file groups: fds of one open file whose driver prints no client id are one
  // client; those with an id are checked against them. Without groups (no kcmp: a fixture
  // tree, no permission) each such fd is a client of its own, and a warning says so.
  void open_files_grouped(const std::vector<core::HostProcess>& processes,
                          const std::optional<std::string>& unknown) override;

  // The clients now. Right after a scan, what it saw; later, every fd it saw is read again:
  // an fd that was closed, or that now refers to another client, no longer holds it, and a
  // client no fd holds is gone (its buffers were freed). New clients need a scan.
  std::vector<ObservedClient> current();
  // What could not be parsed in the last scan or refresh, one line per fd (hostile or garbled
  // fdinfo is reported, never trusted); then, when some clients without an id could not be
  // grouped by open file, "clients counted per fd" and why; and any disagreement between
  // drm-client-id and the open files.
  std::vector<std::string> errors() const;

 private:
  struct Key {
    std::string device;  // drm-pdev, else the node's device number
    uint64_t id = 0;     // drm-client-id or pasid, else a per-fd number (see key_of)
    pid_t thread = 0;    // with the per-fd number: the thread whose own table holds that fd
    auto operator<=>(const Key&) const = default;
  };
  using Clients = std::map<Key, ObservedClient>;

  struct SeenFd {
    DrmClient info;
    dev_t node = 0;
  };

  std::optional<DrmClient> read(int proc_dirfd, const FdRef& ref, std::string& error) const;
  Key key_of(const DrmClient& c, dev_t node, const FdRef& ref) const;
  static void add(Clients& into, Key key, DrmClient info, dev_t node, FdRef ref);
  // clients_ from seen_, by key_of; engine figures kept at their maxima over `before`.
  void group(const Clients& before);
  void refresh();

  int proc_dirfd_ = -1;
  mutable std::mutex mutex_;
  std::set<dev_t> nodes_;
  std::map<FdRef, SeenFd> scanning_, seen_;  // every DRM fd of the scan with usage stats
  Clients clients_, before_scan_;
  // Each fd's open file description, as its lowest (PID, fd): from the scan's kcmp groups.
  std::map<FdRef, FdRef> open_file_;
  std::vector<std::string> scan_errors_, errors_;
  std::string unknown_;                         // why some fds have no open-file group
  std::vector<std::string> grouping_warnings_;  // per-fd counting, id and open-file mismatches
  bool fresh_ = false;                          // clients_ is what a scan just saw
};

}  // namespace gpureap::backend::drm

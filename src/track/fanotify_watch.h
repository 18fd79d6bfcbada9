#pragma once
// The kernel's own news of GPU device files: fanotify reports every open of a watched file with
// the opener's PID, and a close when an open file description is finally released (its last
// fd closed, in whichever process held it last) — the moment the driver frees what that file
// held. Marks are on the files themselves (FAN_MARK_ADD on each path), so stand-in files in a
// test's dev root are watched the same way as device nodes.
//
// Events name their file by its file identifier (FAN_REPORT_FID: the filesystem's id and the
// file's handle, as name_to_handle_at gives them), matched to the watched files' own: the
// kernel opens nothing for the listener. That needs Linux 5.1 or later and a filesystem under
// the dev root that gives file handles and a filesystem id: devtmpfs and tmpfs give handles,
// and report an id on recent kernels (tmpfs since about 6.7) — where they do not, marking
// fails (ENODEV, EOPNOTSUPP, EXDEV). Then events carry an open file descriptor (Source::Fds):
// for a character device the kernel opens the device in the listener for every event (the
// driver's open routine runs there, the listener is itself a holder for an instant), which
// is why it is only the fallback, and `fallback_reason()` says why it was taken.
#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "core/result.h"

namespace gpureap::track {

struct FileEvent {
  enum class Kind { Open, Close };
  Kind kind = Kind::Open;
  // Open: the process that opened the file. Close: the one that dropped the last reference.
  pid_t pid = 0;
  std::string path;  // the watched path the event's file is (as given to open())
  std::chrono::system_clock::time_point at;
};

class FanotifyWatch {
 public:
  // Watches `paths` (each must exist). Fails, saying why and what to do, without the privilege
  // (CAP_SYS_ADMIN), on a kernel or in a container without fanotify, or when a path cannot be
  // marked.
  static core::Result<FanotifyWatch> open(const std::vector<std::string>& paths);
  FanotifyWatch(FanotifyWatch&& other) noexcept;
  FanotifyWatch& operator=(FanotifyWatch&& other) noexcept;
  FanotifyWatch(const FanotifyWatch&) = delete;
  ~FanotifyWatch();

  // Readable (poll POLLIN) when events are queued.
  int fd() const { return fd_; }

  // How events name their file.
  enum class Source { FileHandles, Fds };
  Source source() const { return source_; }
  // Why events carry file descriptors (Source::Fds): the kernel or the filesystem gives no
  // file identifiers. Empty with file handles.
  const std::string& fallback_reason() const { return fallback_; }

  struct Batch {
    std::vector<FileEvent> events;
    // The kernel's queue overflowed (FAN_Q_OVERFLOW): events were lost, only a full rescan
    // tells the truth again.
    bool overflow = false;
  };
  // The events queued now, up to kMaxBatchReads buffers' worth (a few hundred events each);
  // never blocks. More may be left: the fd stays readable. The kernel merges the queued events of
  // one process on one file into one, so their order is lost: an Open and a Close of one process in
  // one batch (given in that order) may as well have been a close and a new open.
  Batch read();
  static constexpr int kMaxBatchReads = 16;

 private:
  FanotifyWatch(int fd, std::vector<std::string> paths);
  int fd_ = -1;
  Source source_ = Source::Fds;
  std::string fallback_;
  std::vector<std::string> paths_;
  std::vector<std::pair<dev_t, ino_t>> ids_;  // of paths_, to name an event's file (Fds)
  std::vector<std::string> handles_;          // of paths_: fsid, handle type and bytes (FIDs)
};

}  // namespace gpureap::track

#include "track/fanotify_watch.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <sys/fanotify.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace gpureap::track {
namespace {

constexpr uint64_t kOpenMask = FAN_OPEN;
constexpr uint64_t kCloseMask = FAN_CLOSE_WRITE | FAN_CLOSE_NOWRITE;

core::Error init_error(int err) {
  if (err == EPERM)
    return core::Error{"watching GPU device files needs CAP_SYS_ADMIN", "run the daemon as root"};
  if (err == ENOSYS || err == EINVAL)
    return core::Error{"this kernel has no fanotify",
                       "holders are found by the periodic scan alone"};
  return core::Error{std::string("cannot start fanotify: ") + std::strerror(err), ""};
}

core::Error mark_error(const std::string& path, int err) {
  return core::Error{"cannot watch " + path + ": " + std::strerror(err), ""};
}

// Marks every path and records its (device, inode) to name the files of later events; the
// file an event carries is an fd, not a name, and its identity is what tells which path it is.
core::Result<std::vector<std::pair<dev_t, ino_t>>> mark_all(int fd,
                                                            const std::vector<std::string>& paths) {
  std::vector<std::pair<dev_t, ino_t>> ids;
  ids.reserve(paths.size());
  for (const auto& path : paths) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return mark_error(path, errno);
    if (::fanotify_mark(fd, FAN_MARK_ADD, kOpenMask | kCloseMask, AT_FDCWD, path.c_str()) != 0) {
      // Without CAP_SYS_ADMIN init fails first; EPERM here is a security module's refusal.
      return mark_error(path, errno);
    }
    ids.emplace_back(st.st_dev, st.st_ino);
  }
  return ids;
}

#ifndef AT_HANDLE_FID
#define AT_HANDLE_FID 0x200  // Linux 6.5: a handle only to compare, for any filesystem
#endif

// A file's identifier as FAN_REPORT_FID gives it: the filesystem's id (statfs f_fsid), then
// the handle's type and bytes, one string to compare.
std::string file_id(const __kernel_fsid_t& fsid, int type, const unsigned char* bytes, size_t n) {
  std::string id(reinterpret_cast<const char*>(&fsid), sizeof fsid);
  id.append(reinterpret_cast<const char*>(&type), sizeof type);
  id.append(reinterpret_cast<const char*>(bytes), n);
  return id;
}

// The identifier of `path`; an errno when the filesystem gives no handle or id.
std::variant<std::string, int> file_id_of(const std::string& path) {
  struct statfs fs {};
  if (::statfs(path.c_str(), &fs) != 0) return errno;
  __kernel_fsid_t fsid;
  static_assert(sizeof fsid == sizeof fs.f_fsid);
  std::memcpy(&fsid, &fs.f_fsid, sizeof fsid);
  if (fsid.val[0] == 0 && fsid.val[1] == 0) return ENODEV;  // as fanotify_mark says of it
  alignas(file_handle) unsigned char buf[sizeof(file_handle) + MAX_HANDLE_SZ];
  auto* fh = reinterpret_cast<file_handle*>(buf);
  int mount_id = 0;
  for (int flags : {0, AT_HANDLE_FID}) {
    fh->handle_bytes = MAX_HANDLE_SZ;
    if (::name_to_handle_at(AT_FDCWD, path.c_str(), fh, &mount_id, flags) == 0)
      return file_id(fsid, fh->handle_type, fh->f_handle, fh->handle_bytes);
    if (errno != EOPNOTSUPP || flags != 0) return errno;
  }
  return EOPNOTSUPP;
}

// The watched files, to name the file of an event.
struct Watched {
  const std::vector<std::string>& paths;
  const std::vector<std::pair<dev_t, ino_t>>& ids;
  const std::vector<std::string>& handles;
};

// The watched path an event's file identifier names, or nullptr. `base` is where the event
// starts in the read buffer: its info records are read byte-wise, as they may sit unaligned.
const std::string* path_of_fid(const Watched& watched, const fanotify_event_metadata& event,
                               const unsigned char* base) {
  size_t at = event.metadata_len;
  while (at + sizeof(fanotify_event_info_header) <= event.event_len) {
    fanotify_event_info_header hdr;
    std::memcpy(&hdr, base + at, sizeof hdr);
    if (hdr.len < sizeof hdr || at + hdr.len > event.event_len) return nullptr;
    if (hdr.info_type == FAN_EVENT_INFO_TYPE_FID &&
        hdr.len >= sizeof(fanotify_event_info_fid) + sizeof(file_handle)) {
      __kernel_fsid_t fsid;
      std::memcpy(&fsid, base + at + offsetof(fanotify_event_info_fid, fsid), sizeof fsid);
      const unsigned char* h = base + at + offsetof(fanotify_event_info_fid, handle);
      file_handle fh;
      std::memcpy(&fh, h, sizeof fh);
      size_t room = hdr.len - sizeof(fanotify_event_info_fid) - sizeof(file_handle);
      if (fh.handle_bytes > room) return nullptr;
      auto id = file_id(fsid, fh.handle_type, h + sizeof(file_handle), fh.handle_bytes);
      for (size_t i = 0; i < watched.handles.size(); ++i)
        if (watched.handles[i] == id) return &watched.paths[i];
      return nullptr;
    }
    at += hdr.len;
  }
  return nullptr;
}

// The watched path the event's open file is, or nullptr when it is none of them. Takes the
// event's fd over: it is closed here whatever the outcome, since every event that is not an
// overflow carries one, opened into this process by the kernel.
const std::string* path_of(const Watched& watched, int event_fd) {
  if (event_fd < 0) return nullptr;
  struct stat st {};
  bool known = ::fstat(event_fd, &st) == 0;
  ::close(event_fd);
  if (!known) return nullptr;
  for (size_t i = 0; i < watched.ids.size(); ++i)
    if (watched.ids[i] == std::pair{st.st_dev, st.st_ino}) return &watched.paths[i];
  return nullptr;
}

void take(const Watched& watched, const fanotify_event_metadata& event, const unsigned char* base,
          FanotifyWatch::Batch& batch) {
  if (event.mask & FAN_Q_OVERFLOW) {
    batch.overflow = true;
    if (event.fd >= 0) ::close(event.fd);
    return;
  }
  const std::string* path =
      watched.handles.empty() ? path_of(watched, event.fd) : path_of_fid(watched, event, base);
  if (event.fd >= 0 && !watched.handles.empty()) ::close(event.fd);  // none is asked for
  if (!path) return;
  auto now = std::chrono::system_clock::now();
  // The kernel merges queued events of one process on one file into one record, OR-ing
  // their masks: an open and its close then come as one, the open first.
  if (event.mask & kOpenMask)
    batch.events.push_back({FileEvent::Kind::Open, event.pid, *path, now});
  if (event.mask & kCloseMask)
    batch.events.push_back({FileEvent::Kind::Close, event.pid, *path, now});
}

// Every whole event in one buffer the kernel filled; false when the layout is not the one this
// was built for (then nothing in it can be trusted, not even where its fds are).
// Events with file identifiers are padded to 4 bytes only, so a record after one may start
// off the metadata's 8-byte alignment: each is copied out rather than read in place (what
// FAN_EVENT_OK and FAN_EVENT_NEXT would do).
bool take_all(const Watched& watched, const char* buf, ssize_t len, FanotifyWatch::Batch& batch) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(buf);
  size_t at = 0;
  const auto end = static_cast<size_t>(len);
  while (end - at >= FAN_EVENT_METADATA_LEN) {
    fanotify_event_metadata event;
    std::memcpy(&event, bytes + at, sizeof event);
    if (event.event_len < FAN_EVENT_METADATA_LEN || event.event_len > end - at) break;
    if (event.vers != FANOTIFY_METADATA_VERSION) return false;
    take(watched, event, bytes + at, batch);
    at += event.event_len;
  }
  return true;
}

}  // namespace

namespace {

// Events with file identifiers: nothing is opened for the listener. The reason it cannot be
// had, when it cannot (the caller then takes events with file descriptors).
std::optional<std::string> fid_marks(int fd, const std::vector<std::string>& paths,
                                     std::vector<std::string>& handles) {
  for (const auto& path : paths) {
    auto id = file_id_of(path);
    if (auto* err = std::get_if<int>(&id))
      return "the filesystem of " + path + " gives no file handle (" + std::strerror(*err) + ")";
    if (::fanotify_mark(fd, FAN_MARK_ADD, kOpenMask | kCloseMask, AT_FDCWD, path.c_str()) != 0)
      return "the kernel cannot report " + path + " by file handle (" + std::strerror(errno) + ")";
    handles.push_back(std::get<std::string>(std::move(id)));
  }
  return std::nullopt;
}

// Since Linux 5.13 a listener without CAP_SYS_ADMIN may start a group that reports file
// identifiers, but the kernel then hides the PID of every other process's event (it reads 0):
// useless for finding holders, so the watch asks for the capability itself.
bool has_cap_sys_admin() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (::syscall(SYS_capget, &header, data) != 0) return false;
  return (data[CAP_SYS_ADMIN / 32].effective & (1u << (CAP_SYS_ADMIN % 32))) != 0;
}

}  // namespace

core::Result<FanotifyWatch> FanotifyWatch::open(const std::vector<std::string>& paths) {
  if (!has_cap_sys_admin()) return init_error(EPERM);
  std::string fallback;
  int fid = ::fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK | FAN_REPORT_FID,
                            O_RDONLY | O_LARGEFILE | O_CLOEXEC);
  if (fid < 0 && errno != EINVAL) return init_error(errno);
  if (fid < 0) {
    fallback = "this kernel reports no file identifiers (FAN_REPORT_FID needs Linux 5.1)";
  } else {
    std::vector<std::string> handles;
    if (auto why = fid_marks(fid, paths, handles)) {
      ::close(fid);
      fallback = *why;
    } else {
      FanotifyWatch watch(fid, paths);
      watch.source_ = Source::FileHandles;
      watch.handles_ = std::move(handles);
      for (const auto& path : paths) {
        struct stat st {};
        if (::stat(path.c_str(), &st) == 0) watch.ids_.emplace_back(st.st_dev, st.st_ino);
      }
      return watch;
    }
  }
  int fd = ::fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK,
                           O_RDONLY | O_LARGEFILE | O_CLOEXEC);
  if (fd < 0) return init_error(errno);
  auto ids = mark_all(fd, paths);
  if (!ids) {
    ::close(fd);
    return ids.error();
  }
  FanotifyWatch watch(fd, paths);
  watch.ids_ = std::move(*ids);
  watch.fallback_ = std::move(fallback);
  return watch;
}

FanotifyWatch::FanotifyWatch(int fd, std::vector<std::string> paths)
    : fd_(fd), paths_(std::move(paths)) {}

FanotifyWatch::FanotifyWatch(FanotifyWatch&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      source_(other.source_),
      fallback_(std::move(other.fallback_)),
      paths_(std::move(other.paths_)),
      ids_(std::move(other.ids_)),
      handles_(std::move(other.handles_)) {}

FanotifyWatch& FanotifyWatch::operator=(FanotifyWatch&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    source_ = other.source_;
    fallback_ = std::move(other.fallback_);
    paths_ = std::move(other.paths_);
    ids_ = std::move(other.ids_);
    handles_ = std::move(other.handles_);
  }
  return *this;
}

FanotifyWatch::~FanotifyWatch() {
  if (fd_ >= 0) ::close(fd_);
}

FanotifyWatch::Batch FanotifyWatch::read() {
  Batch batch;
  if (fd_ < 0) return batch;
  // With file descriptors each event in a read brings an fd into this process until it is
  // closed: a small buffer keeps that well under the fd limit.
  alignas(fanotify_event_metadata) char buf[4096];
  const std::vector<std::string> no_handles;
  const Watched watched{paths_, ids_, source_ == Source::FileHandles ? handles_ : no_handles};
  // At most kMaxBatchReads buffers a call: a storm of opens can queue events as fast as they
  // are read, and a reader that waited for the queue to drain would never hand its batch on
  // (a new holder's event behind it unseen, the batch growing without end). The caller's
  // poll finds the fd still readable and calls again.
  for (int reads = 0; reads < kMaxBatchReads; ++reads) {
    ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) break;
    if (n <= 0 || !take_all(watched, buf, n, batch)) {
      // The kernel drops an event whose fd it cannot open here (EMFILE, ENFILE...) and
      // says so only through this error: an event is lost, as in an overflow. Stop; a
      // poll that still finds the fd readable calls again.
      batch.overflow = true;
      break;
    }
  }
  return batch;
}

}  // namespace gpureap::track

#include "track/fanotify_watch.h"

#include <fcntl.h>
#include <sys/fanotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

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

// The watched files, to name the file of an event.
struct Watched {
  const std::vector<std::string>& paths;
  const std::vector<std::pair<dev_t, ino_t>>& ids;
};

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

void take(const Watched& watched, const fanotify_event_metadata& event,
          FanotifyWatch::Batch& batch) {
  if (event.mask & FAN_Q_OVERFLOW) {
    batch.overflow = true;
    if (event.fd >= 0) ::close(event.fd);
    return;
  }
  const std::string* path = path_of(watched, event.fd);
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
bool take_all(const Watched& watched, const char* buf, ssize_t len, FanotifyWatch::Batch& batch) {
  auto* event = reinterpret_cast<const fanotify_event_metadata*>(buf);
  for (; FAN_EVENT_OK(event, len); event = FAN_EVENT_NEXT(event, len)) {
    if (event->vers != FANOTIFY_METADATA_VERSION) return false;
    take(watched, *event, batch);
  }
  return true;
}

}  // namespace

core::Result<FanotifyWatch> FanotifyWatch::open(const std::vector<std::string>& paths) {
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
  return watch;
}

FanotifyWatch::FanotifyWatch(int fd, std::vector<std::string> paths)
    : fd_(fd), paths_(std::move(paths)) {}

FanotifyWatch::FanotifyWatch(FanotifyWatch&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      paths_(std::move(other.paths_)),
      ids_(std::move(other.ids_)) {}

FanotifyWatch& FanotifyWatch::operator=(FanotifyWatch&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    paths_ = std::move(other.paths_);
    ids_ = std::move(other.ids_);
  }
  return *this;
}

FanotifyWatch::~FanotifyWatch() {
  if (fd_ >= 0) ::close(fd_);
}

FanotifyWatch::Batch FanotifyWatch::read() {
  Batch batch;
  if (fd_ < 0) return batch;
  // Each event in a read brings an fd into this process until it is closed: a small buffer keeps
  // that well under the fd limit.
  alignas(fanotify_event_metadata) char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) break;
    if (n <= 0 || !take_all(Watched{paths_, ids_}, buf, n, batch)) {
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

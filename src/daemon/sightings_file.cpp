#include "daemon/sightings_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/file_write.h"
#include "base/log.h"
#include "output/sightings_wire.h"

namespace gpureap::daemon {
namespace {

// Far above any node's: thousands of listings and their ends are a few hundred KiB.
constexpr off_t kMaxFileBytes = 64 << 20;

core::Error refused(const std::string& path, const std::string& why, const std::string& hint) {
  return core::Error{"the last run's sightings in " + path + " are not taken: " + why, hint};
}

std::string errno_text(int err) {
  return std::strerror(err);
}

std::string octal_mode(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

constexpr const char* kNotRegularHint =
    "gpureap neither reads nor replaces it: set sightings_file to a regular file's path, or \"\" "
    "to keep none";

// What is at `name` in `dir`, never followed: nothing, a regular file, or (in `other`) why it
// is neither.
struct Entry {
  bool exists = false;
  std::optional<std::string> other;
};
Entry entry_at(int dir, const std::string& name) {
  struct stat st {};
  if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
    return errno == ENOENT ? Entry{} : Entry{true, errno_text(errno)};
  if (S_ISREG(st.st_mode)) return Entry{true, std::nullopt};
  return Entry{true, S_ISLNK(st.st_mode) ? "it is a symbolic link" : "it is not a regular file"};
}

constexpr const char* kTrustedHint =
    "set sightings_file (or local_socket) to a path whose directories are root's (or the "
    "daemon's user's), none of them a symbolic link, and none writable by another user but for a "
    "sticky one above the last (as /tmp)";

// `dir` (absolute) opened from "/" one name at a time, never through a symbolic link: each
// directory on the way is root's or this user's, and writable by nobody else unless it is sticky
// (others may add names there, but not rename or remove the daemon's); the last one, where the
// file lives, by nobody else at all. A missing last one is made (0700). Anyone who could rename
// or link anything on the way could hand the daemon a directory of their choosing, with an older
// file of the daemon's own in it, or a file to write over.
core::Result<int> open_trusted_directory(const std::string& dir) {
  auto untrusted = [](const std::string& at, const struct stat& st, bool last) {
    const bool owner_ok = st.st_uid == ::geteuid() || st.st_uid == 0;
    const bool others_write = (st.st_mode & (S_IWGRP | S_IWOTH)) != 0;
    const bool sticky = (st.st_mode & S_ISVTX) != 0;
    if (owner_ok && !(others_write && (last || !sticky))) return std::optional<core::Error>();
    return std::optional<core::Error>(
        core::Error{at + " may be written by another user (owner uid " + std::to_string(st.st_uid) +
                        ", mode " + octal_mode(st.st_mode) + "), who could put an older file back",
                    kTrustedHint});
  };
  int fd = ::open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  std::string at;
  size_t begin = 0;
  for (;;) {
    if (fd < 0)
      return core::Error{"cannot open " + (at.empty() ? "/" : at) + ": " + errno_text(errno),
                         kTrustedHint, errno};
    while (begin < dir.size() && dir[begin] == '/') ++begin;
    const size_t end = std::min(dir.find('/', begin), dir.size());
    const std::string name = dir.substr(begin, end - begin);
    size_t next = end;
    while (next < dir.size() && dir[next] == '/') ++next;
    const bool last = next >= dir.size();
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode)) {
      const int err = errno;
      ::close(fd);
      return core::Error{"cannot read " + (at.empty() ? "/" : at) + ": " + errno_text(err),
                         kTrustedHint, err};
    }
    if (auto bad = untrusted(at.empty() ? "/" : at, st, name.empty())) {
      ::close(fd);
      return *bad;
    }
    if (name.empty()) return fd;  // `dir` itself
    if (name == "..") {
      ::close(fd);
      return core::Error{dir + " names a parent directory (..)", kTrustedHint};
    }
    at += "/" + name;
    int child = ::openat(fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (child < 0 && errno == ENOENT && last &&
        (::mkdirat(fd, name.c_str(), 0700) == 0 || errno == EEXIST))
      child = ::openat(fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (child < 0 && (errno == ELOOP || errno == ENOTDIR)) {
      ::close(fd);
      return core::Error{at + " is a symbolic link or no directory", kTrustedHint};
    }
    ::close(fd);
    fd = child;
    begin = end;
  }
}

}  // namespace

std::string sightings_file_for(const std::string& socket) {
  if (socket.empty()) return "";
  const auto slash = socket.rfind('/');
  return (slash == std::string::npos ? std::string() : socket.substr(0, slash + 1)) +
         "sightings.json";
}

core::Result<SightingsFile> SightingsFile::open(const std::string& path) {
  const auto slash = path.rfind('/');
  if (path.empty() || path.front() != '/' || slash == path.size() - 1)
    return core::Error{"cannot keep the sightings in " + path + ": not an absolute file path",
                       "set sightings_file to one; a restart will date every listing anew"};
  auto fd = open_trusted_directory(path.substr(0, slash));
  if (!fd)
    return core::Error{"cannot keep the sightings in " + path + ": " + fd.error().message,
                       fd.error().hint + "; a restart will date every listing anew"};
  SightingsFile f;
  f.path_ = path;
  f.name_ = path.substr(slash + 1);
  f.dir_ = std::shared_ptr<int>(new int(*fd), [](int* p) {
    ::close(*p);
    delete p;
  });
  return f;
}

core::Result<std::optional<core::CarriedSightings>> SightingsFile::load(const procfs::ProcFs& proc,
                                                                        uint64_t now_ticks) const {
  using Out = std::optional<core::CarriedSightings>;
  // Nothing but a regular file is opened: opening a device runs its driver.
  const Entry entry = entry_at(*dir_, name_);
  if (!entry.exists) return Out{};
  if (entry.other) return refused(path_, *entry.other, kNotRegularHint);
  const int fd =
      ::openat(*dir_, name_.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    if (errno == ENOENT) return Out{};
    return refused(path_, errno_text(errno), "");
  }
  struct stat st {};
  std::string text;
  std::optional<core::Error> error;
  if (::fstat(fd, &st) != 0) {
    error = refused(path_, errno_text(errno), "");
  } else if (!S_ISREG(st.st_mode)) {
    error = refused(path_, "not a regular file", kNotRegularHint);
  } else if (st.st_uid != ::geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH))) {
    error = refused(path_,
                    "another user may have written it (owner uid " + std::to_string(st.st_uid) +
                        ", mode " + octal_mode(st.st_mode) + ")",
                    "only the daemon's user may write its runtime directory; remove the file");
  } else if (st.st_size > kMaxFileBytes) {
    error = refused(path_, "larger than any daemon writes", "remove it");
  } else {
    text.resize(static_cast<size_t>(st.st_size));
    size_t got = 0;
    while (got < text.size()) {
      const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    text.resize(got);
  }
  ::close(fd);
  if (error) return *error;

  auto carried = output::sightings_from_wire_text(text);
  if (!carried)
    return refused(path_, carried.error().message, "the daemon writes a new one; nothing to do");
  const auto boot_id = proc.boot_id();
  if (!boot_id || carried->boot_id != *boot_id)
    return refused(path_, "they are of another boot", "");
  const auto pid_namespace = proc.pid_namespace();
  if (!pid_namespace || carried->pid_namespace != pid_namespace)
    return refused(path_, "they are of another PID namespace", "");
  const auto hz = static_cast<uint64_t>(::sysconf(_SC_CLK_TCK));
  const uint64_t max_age =
      static_cast<uint64_t>(
          std::chrono::duration_cast<std::chrono::seconds>(kMaxSightingsAge).count()) *
      hz;
  if (carried->saved_at_ticks > now_ticks) return refused(path_, "they are dated after now", "");
  if (now_ticks - carried->saved_at_ticks > max_age)
    return refused(path_,
                   "they were saved " + std::to_string((now_ticks - carried->saved_at_ticks) / hz) +
                       " s ago, longer than the daemon may have been away and still know them",
                   "");
  return Out{std::move(*carried)};
}

std::optional<std::string> SightingsFile::save(const core::CarriedSightings& carried) const {
  const std::string text = output::sightings_to_wire_text(carried);
  // A new file renamed over the old: a reader (the next run, after a crash mid-write) sees the
  // one or the other whole. O_NOFOLLOW and O_EXCL after an unlink: nothing planted at the
  // temporary name is followed or written through.
  // A device, a directory or a link at the path (sightings_file = "/dev/null") is not replaced.
  if (auto other = entry_at(*dir_, name_).other) return *other + " (" + kNotRegularHint + ")";
  const std::string temporary = name_ + ".new";
  ::unlinkat(*dir_, temporary.c_str(), 0);
  const int fd = ::openat(*dir_, temporary.c_str(),
                          O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
  if (fd < 0) return errno_text(errno);
  std::optional<std::string> error;
  if (!base::write_all(fd, text)) error = errno_text(errno);
  if (::close(fd) != 0 && !error) error = errno_text(errno);
  if (!error && ::renameat(*dir_, temporary.c_str(), *dir_, name_.c_str()) != 0)
    error = errno_text(errno);
  if (error) ::unlinkat(*dir_, temporary.c_str(), 0);
  return error;
}

void SightingsKeeper::on_collection(const engine::Collection& c) {
  if (!c.carried) return;
  std::lock_guard lock(mutex_);
  latest_ = c.carried;
  const auto now = Clock::now();
  core::CarriedSightings undated = *latest_;
  undated.saved_at_ticks = 0;
  const bool changed = !written_ || undated != *written_;
  if ((changed && now - written_at_ >= std::chrono::seconds(1)) || now - written_at_ >= kRefresh)
    write(*latest_, now);
}

void SightingsKeeper::flush() {
  std::lock_guard lock(mutex_);
  if (latest_) write(*latest_, Clock::now());
}

void SightingsKeeper::write(const core::CarriedSightings& carried, Clock::time_point now) {
  core::CarriedSightings out = carried;
  out.boot_id = boot_id_;
  const auto error = file_.save(out);
  written_at_ = now;
  if (error) {
    if (*error != failed_)
      base::log_warning("cannot save the sightings for the next run in " + file_.path() + ": " +
                        *error + "; a restart will date every listing anew");
    failed_ = *error;
    written_.reset();
    return;
  }
  if (!failed_.empty()) base::log_info("the sightings are saved in " + file_.path() + " again");
  failed_.clear();
  out.saved_at_ticks = 0;
  out.boot_id.clear();
  written_ = std::move(out);
}

}  // namespace gpureap::daemon

#include "kernel/kmsg_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace gpureap::kernel {
namespace {

// One /dev/kmsg read returns one record; the kernel refuses a buffer shorter than it (EINVAL).
constexpr size_t kRecordBuffer = 16 * 1024;
// A saved log is read in pieces of this size, so a large one never sits in memory whole.
constexpr size_t kFileChunk = 1 << 20;

std::string open_problem(const std::string& path, int err) {
  if (err == EPERM || err == EACCES)
    return path + ": " + std::strerror(err) +
           " (reading the kernel log needs root or CAP_SYSLOG): run as root to see Xid errors; "
           "everything else is shown";
  if (err == ENOENT) return path + ": no such file (pass --kmsg FILE to read a saved log)";
  return path + ": " + std::strerror(err);
}

}  // namespace

KmsgReader::KmsgReader(std::string path) : path_(std::move(path)) {}

KmsgReader::~KmsgReader() {
  if (fd_ >= 0) ::close(fd_);
}

KmsgReader::KmsgReader(KmsgReader&& o) noexcept
    : path_(std::move(o.path_)),
      fd_(o.fd_),
      device_(o.device_),
      offset_(o.offset_),
      lines_(std::move(o.lines_)),
      problem_(std::move(o.problem_)),
      lost_(o.lost_) {
  o.fd_ = -1;
}

bool KmsgReader::open_log() {
  int fd = ::open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    problem_ = open_problem(path_, errno);
    return false;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !(S_ISCHR(st.st_mode) || S_ISREG(st.st_mode))) {
    ::close(fd);
    problem_ = path_ + ": neither the kernel's log device nor a saved log file";
    return false;
  }
  fd_ = fd;
  device_ = S_ISCHR(st.st_mode);
  offset_ = 0;
  lines_ = KmsgLineParser();
  problem_.reset();
  return true;
}

uint64_t KmsgReader::read_new(const std::function<void(const KmsgRecord&)>& each) {
  if (fd_ < 0 && !open_log()) return 0;
  return device_ ? read_device(each) : read_file(each);
}

uint64_t KmsgReader::read_device(const std::function<void(const KmsgRecord&)>& each) {
  std::vector<char> buf(kRecordBuffer);
  uint64_t n = 0;
  for (;;) {
    ssize_t got = ::read(fd_, buf.data(), buf.size());
    if (got > 0) {
      for (auto& r : lines_.feed(std::string_view(buf.data(), static_cast<size_t>(got)))) {
        each(r);
        ++n;
      }
      continue;
    }
    if (got < 0 && errno == EINTR) continue;
    // The kernel overwrote records we had not read yet: the next read starts at the oldest.
    if (got < 0 && errno == EPIPE) {
      ++lost_;
      continue;
    }
    if (got < 0 && errno != EAGAIN) {
      // Some kernels refuse at the first read rather than at open.
      problem_ = open_problem(path_, errno);
      ::close(fd_);
      fd_ = -1;
    }
    break;
  }
  for (auto& r : lines_.take_open()) {
    each(r);
    ++n;
  }
  return n;
}

uint64_t KmsgReader::read_file(const std::function<void(const KmsgRecord&)>& each) {
  struct stat st {};
  if (::fstat(fd_, &st) != 0) return 0;
  // A log that got shorter was replaced or truncated: read it again from its start.
  if (static_cast<uint64_t>(st.st_size) < offset_) {
    offset_ = 0;
    lines_ = KmsgLineParser();
  }
  std::vector<char> buf(kFileChunk);
  uint64_t n = 0;
  for (;;) {
    ssize_t got = ::pread(fd_, buf.data(), buf.size(), static_cast<off_t>(offset_));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    offset_ += static_cast<uint64_t>(got);
    for (auto& r : lines_.feed(std::string_view(buf.data(), static_cast<size_t>(got)))) {
      each(r);
      ++n;
    }
  }
  // The last record is complete once its line is: a saved log gets no continuation lines later.
  for (auto& r : lines_.take_open()) {
    each(r);
    ++n;
  }
  return n;
}

}  // namespace gpureap::kernel

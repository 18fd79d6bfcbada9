#include "kernel/kmsg_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace gpureap::kernel {
namespace {

// One /dev/kmsg read returns one record; the kernel refuses a buffer shorter than it (EINVAL).
constexpr size_t kRecordBuffer = KmsgReader::kMaxRecordBytes;
// A saved log is read in pieces of this size, so a large one never sits in memory whole.
constexpr size_t kFileChunk = KmsgReader::kReadChunk;

// The kernel log device's number (Documentation/admin-guide/devices.txt: char 1:11 kmsg).
bool is_kmsg_device(const struct stat& st) {
  return S_ISCHR(st.st_mode) && ::major(st.st_rdev) == 1 && ::minor(st.st_rdev) == 11;
}

std::string open_problem(const std::string& path, int err) {
  if (err == EPERM || err == EACCES)
    return path + ": " + std::strerror(err) +
           " (reading the kernel log needs root or CAP_SYSLOG): run as root to see GPU errors; "
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
      lost_(o.lost_),
      line_bytes_(o.line_bytes_),
      cutting_(o.cutting_),
      cut_lines_(o.cut_lines_),
      continuations_(o.continuations_) {
  o.fd_ = -1;
}

bool KmsgReader::open_log() {
  int fd = ::open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    problem_ = open_problem(path_, errno);
    return false;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !(is_kmsg_device(st) || S_ISREG(st.st_mode))) {
    ::close(fd);
    problem_ =
        path_ + ": neither the kernel's log device (/dev/kmsg, char 1:11) nor a saved log file";
    return false;
  }
  fd_ = fd;
  device_ = S_ISCHR(st.st_mode);
  offset_ = 0;
  lines_ = KmsgLineParser();
  line_bytes_ = 0;
  cutting_ = false;
  problem_.reset();
  return true;
}

uint64_t KmsgReader::read_new(const std::function<void(const KmsgRecord&)>& each) {
  if (fd_ < 0 && !open_log()) return 0;
  return device_ ? read_device(each) : read_file(each);
}

uint64_t KmsgReader::feed(std::string_view bytes,
                          const std::function<void(const KmsgRecord&)>& each) {
  uint64_t n = 0;
  auto parse = [&](std::string_view piece) {
    for (auto& r : lines_.feed(piece)) {
      each(r);
      ++n;
    }
  };
  while (!bytes.empty()) {
    const size_t nl = bytes.find('\n');
    const size_t line = nl == std::string_view::npos ? bytes.size() : nl;
    const size_t with_end = nl == std::string_view::npos ? line : line + 1;
    if (cutting_) {  // the rest of a cut line: only its end matters
      if (nl != std::string_view::npos) {
        cutting_ = false;
        parse("\n");
      }
      bytes.remove_prefix(with_end);
      continue;
    }
    // A record's continuation lines (" KEY=value") are a handful; past that they are dropped.
    if (line_bytes_ == 0 && line > 0) {
      continuations_ = bytes.front() == ' ' ? continuations_ + 1 : 0;
      if (continuations_ > kMaxContinuationLines) {
        cutting_ = true;
        continue;
      }
    }
    const size_t room = kMaxRecordBytes - line_bytes_;
    if (line > room) {
      parse(bytes.substr(0, room));
      ++cut_lines_;
      line_bytes_ = 0;
      cutting_ = true;
      bytes.remove_prefix(room);
      continue;
    }
    parse(bytes.substr(0, with_end));
    line_bytes_ = nl == std::string_view::npos ? line_bytes_ + line : 0;
    bytes.remove_prefix(with_end);
  }
  return n;
}

uint64_t KmsgReader::read_device(const std::function<void(const KmsgRecord&)>& each) {
  std::vector<char> buf(kRecordBuffer);
  uint64_t n = 0;
  uint64_t read = 0;
  while (read < kMaxBytesPerPass) {
    ssize_t got = ::read(fd_, buf.data(), buf.size());
    if (got > 0) {
      read += static_cast<uint64_t>(got);
      n += feed(std::string_view(buf.data(), static_cast<size_t>(got)), each);
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
    line_bytes_ = 0;
    cutting_ = false;
  }
  // No further than the log was long now, and no more than a pass's worth: a log written as
  // fast as it is read still lets this call return.
  const uint64_t end =
      std::min<uint64_t>(static_cast<uint64_t>(st.st_size), offset_ + kMaxBytesPerPass);
  std::vector<char> buf(kFileChunk);
  uint64_t n = 0;
  while (offset_ < end) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), end - offset_));
    ssize_t got = ::pread(fd_, buf.data(), want, static_cast<off_t>(offset_));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    offset_ += static_cast<uint64_t>(got);
    n += feed(std::string_view(buf.data(), static_cast<size_t>(got)), each);
  }
  // The last record is complete once its line is: a saved log gets no continuation lines later.
  for (auto& r : lines_.take_open()) {
    each(r);
    ++n;
  }
  return n;
}

}  // namespace gpureap::kernel

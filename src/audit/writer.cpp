#include "audit/writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "audit/log_files.h"
#include "base/file_write.h"
#include "base/hostname.h"
#include "base/log.h"
#include "metric/names.h"
#include "text/byte_format.h"
#include "text/plural.h"
#include "text/time_format.h"

namespace gpureap::audit {
namespace {

using text::plural;

using base::write_all;

// What an operator can do about an errno, for the one error line of a failure streak.
std::string remedy(int err) {
  switch (err) {
    case ENOSPC:
    case EDQUOT:
      return "free space on its file system, or set audit_log to a file on another one";
    case EACCES:
    case EPERM:
      return "let the daemon's user write there (it runs as root under the provided unit), or "
             "set audit_log to a path it may write";
    case EROFS:
      return "the file system is read-only: set audit_log to a writable path (e.g. under /var/log)";
    case ENOTDIR:
      return "a part of the path is not a directory: fix audit_log";
    case EISDIR:
      return "it is a directory: set audit_log to a file path";
    default:
      return "check the path and its file system";
  }
}

class FdCloser {
 public:
  explicit FdCloser(int& fd) : fd_(fd) {}
  ~FdCloser() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int& fd_;
};

}  // namespace

AuditLog::AuditLog(AuditLogSettings settings, size_t max_pending)
    : settings_(std::move(settings)), max_pending_(std::max<size_t>(max_pending, 1)) {}

AuditLog::~AuditLog() {
  close();
}

void AuditLog::close() noexcept {
  try {
    std::lock_guard lock(mutex_);
    if (!pending_.empty() || gap_records_ > 0) write_pending_locked();
    publish_locked();
    if (pending_.empty() && gap_records_ == 0) return;
    counters_.records_dropped += pending_.size();
    gap_records_ = 0;  // only the note of an earlier drop, already logged
    if (pending_.empty()) return;
    const size_t lost = pending_.size();
    pending_.clear();
    publish_locked();
    base::log_error("audit log: lost " + plural(lost, "record") + " that could not be written to " +
                    settings_.path + " (" + last_error_ + ") as gpureap stops");
  } catch (...) {
    // Logging failed too; there is nobody left to tell.
  }
}

bool AuditLog::append(const Record& record) noexcept {
  try {
    Pending pending{to_json_line(record), record.time};
    std::lock_guard lock(mutex_);
    enqueue_locked(std::move(pending));
    bool written = write_pending_locked();
    publish_locked();
    return written;
  } catch (...) {
    // Only memory exhaustion gets here; the record cannot even be kept.
    std::lock_guard lock(mutex_);
    ++counters_.records_dropped;
    publish_locked();
    base::log_error("audit log: out of memory: a record about PID " +
                    std::to_string(record.process.pid) + " is lost");
    return false;
  }
}

bool AuditLog::flush() noexcept {
  try {
    std::lock_guard lock(mutex_);
    bool written = write_pending_locked();
    publish_locked();
    return written;
  } catch (...) {
    return false;
  }
}

void AuditLog::reconfigure(AuditLogSettings settings) noexcept {
  try {
    std::lock_guard lock(mutex_);
    bool moved = settings.path != settings_.path;
    settings_ = std::move(settings);
    // A failure at the new path is news: it gets its own error line.
    if (moved) failing_ = rotation_failing_ = false;
    write_pending_locked();
    publish_locked();
  } catch (...) {
  }
}

AuditLogSettings AuditLog::settings() const {
  std::lock_guard lock(mutex_);
  return settings_;
}

AuditLogCounters AuditLog::counters() const {
  std::lock_guard lock(published_mutex_);
  return published_;
}

void AuditLog::publish_locked() {
  std::lock_guard lock(published_mutex_);
  published_ = counters_;
  published_.pending = pending_.size();
}

void AuditLog::add_metrics(std::vector<exporter::MetricFamily>& out) const {
  auto c = counters();
  using exporter::MetricType;
  out.push_back(
      {metric::kAuditRecords, "Records written to the audit log.", MetricType::Counter, {}});
  out.back().add({}, static_cast<double>(c.records_written));
  out.push_back({metric::kAuditWriteErrors,
                 "Failed attempts to open, write, sync or rotate the audit log.",
                 MetricType::Counter,
                 {}});
  out.back().add({}, static_cast<double>(c.write_errors));
  out.push_back(
      {metric::kAuditRecordsDropped,
       "Audit records lost: the in-memory queue was full, or they were unwritten at exit.",
       MetricType::Counter,
       {}});
  out.back().add({}, static_cast<double>(c.records_dropped));
  out.push_back({metric::kAuditPendingRecords,
                 "Audit records waiting in memory for the audit log to be writable.",
                 MetricType::Gauge,
                 {}});
  out.back().add({}, static_cast<double>(c.pending));
}

void AuditLog::enqueue_locked(Pending pending) {
  if (pending_.size() >= max_pending_) {
    // The oldest go first: the newest decisions are the ones an operator asks about.
    const auto& dropped = pending_.front();
    if (gap_records_ == 0) gap_first_ = dropped.time;
    gap_last_ = dropped.time;
    ++gap_records_;
    ++counters_.records_dropped;
    pending_.pop_front();
    if (!dropping_) {
      dropping_ = true;
      base::log_error("audit log: the memory queue is full (" + plural(max_pending_, "record") +
                      "): the oldest are dropped until " + settings_.path +
                      " can be written; the log will then say how many");
    }
  }
  pending_.push_back(std::move(pending));
}

bool AuditLog::write_pending_locked() {
  if (pending_.empty() && gap_records_ == 0) return true;
  uint64_t written_before = counters_.records_written;
  if (auto failure = write_lines_locked()) {
    note_failure_locked(*failure);
    return false;
  }
  if (failing_)
    base::log_notice("audit log: writing to " + settings_.path + " again after " +
                     plural(failed_attempts_, "failed attempt") + "; wrote " +
                     plural(counters_.records_written - written_before, "record") +
                     " that waited in memory");
  note_success_locked();
  return true;
}

std::optional<AuditLog::Failure> AuditLog::write_lines_locked() {
  OpenFile file;
  if (auto failure = open_locked(file)) return failure;
  FdCloser closer(file.fd);
  bool may_rotate = true;  // one failed rotation per batch is enough
  auto write_line = [&](const std::string& line) -> std::optional<Failure> {
    if (may_rotate && file.regular && file.size > 0 &&
        file.size + line.size() > settings_.max_bytes) {
      if (::fsync(file.fd) != 0) return Failure{"sync", errno};
      ::close(file.fd);
      file.fd = -1;
      may_rotate = rotate_locked(file.size);
      if (auto failure = open_locked(file)) return failure;
    }
    if (!write_all(file.fd, line)) return Failure{"write to", errno};
    file.size += line.size();
    return std::nullopt;
  };
  if (gap_records_ > 0) {
    if (auto failure = write_line(gap_line_locked())) return failure;
    gap_records_ = 0;
  }
  while (!pending_.empty()) {
    if (auto failure = write_line(pending_.front().line)) return failure;
    pending_.pop_front();
    ++counters_.records_written;
  }
  // The lines are written; a failed sync cannot say which of them reached the disk, so they
  // are not queued again (that could duplicate them) but the failure is reported.
  if (::fsync(file.fd) != 0 && errno != EINVAL) return Failure{"sync", errno};
  return std::nullopt;
}

std::optional<AuditLog::Failure> AuditLog::open_locked(OpenFile& file) {
  const std::string& path = settings_.path;
  // Read access: to check the last byte. O_NONBLOCK: a FIFO at the path must not hang the
  // daemon (it is ignored for regular files). O_NOFOLLOW: a symlink planted at the path must
  // not make root append to a file of someone's choosing.
  const int flags = O_RDWR | O_APPEND | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW;
  int fd = ::open(path.c_str(), flags);
  if (fd < 0 && errno == ENOENT) {
    if (int err = make_parent_directories(path); err != 0)
      return Failure{"create the directory of", err};
    fd = ::open(path.c_str(), flags | O_CREAT, 0640);
    if (fd >= 0) {
      if (int err = sync_parent_directory(path); err != 0) {
        ::close(fd);
        return Failure{"sync the directory of", err};
      }
    }
  }
  if (fd < 0) return Failure{"open", errno};
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return Failure{"inspect", err};
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Failure{"use a non-regular file as", EINVAL};
  }
  file.fd = fd;
  file.regular = true;
  file.size = file.regular ? static_cast<uint64_t>(st.st_size) : 0;
  if (file.size > 0) {
    // A write cut short (full disk, crash) leaves half a line; end it, so that only that line
    // is unreadable and the next record starts on a line of its own.
    char last = '\n';
    if (::pread(fd, &last, 1, static_cast<off_t>(file.size - 1)) == 1 && last != '\n') {
      if (!write_all(fd, "\n")) {
        int err = errno;
        ::close(fd);
        file.fd = -1;
        return Failure{"write to", err};
      }
      ++file.size;
    }
  }
  return std::nullopt;
}

bool AuditLog::rotate_locked(uint64_t size) {
  const auto& s = settings_;
  Rotation rotation = rotate_log_files(s.path, s.keep);
  for (const auto& removed : rotation.removed)
    base::log_notice("audit log: removed " + removed +
                     ", the oldest beyond audit_keep = " + std::to_string(s.keep));
  if (rotation.error != 0) {
    ++counters_.write_errors;
    if (!rotation_failing_) {
      rotation_failing_ = true;
      base::log_error(
          "audit log: cannot " + rotation.failed_step + ": " + std::strerror(rotation.error) +
          "; records go on to " + s.path +
          ", which grows past audit_max_bytes until rotation works: " + remedy(rotation.error));
    }
    return false;
  }
  rotation_failing_ = false;
  base::log_info("audit log: rotated " + s.path + " (" + text::human_bytes(size) + ") to " +
                 rotated_path(s.path, 1));
  return true;
}

std::string AuditLog::gap_line_locked() const {
  Record gap;
  gap.time = gap_last_;
  gap.host = base::host_name();
  gap.event = "records-dropped";
  gap.outcome = "dropped";
  gap.detail = plural(gap_records_, "audit record") + " from " + text::iso8601_utc(gap_first_) +
               " to " + text::iso8601_utc(gap_last_) +
               " were dropped: the log could not be written (" + last_error_ + ") and " +
               plural(max_pending_, "record") + " already waited in memory";
  return to_json_line(gap);
}

void AuditLog::note_failure_locked(const Failure& failure) {
  ++counters_.write_errors;
  ++failed_attempts_;
  last_error_ = failure.what + " " + settings_.path + ": " + std::strerror(failure.error);
  if (failing_) return;
  failing_ = true;
  base::log_error("audit log: cannot " + last_error_ + "; keeping " +
                  plural(pending_.size(), "record") + " in memory (at most " +
                  std::to_string(max_pending_) +
                  ") to write first once it works: " + remedy(failure.error));
}

void AuditLog::note_success_locked() {
  failing_ = dropping_ = false;
  failed_attempts_ = 0;
}

}  // namespace gpureap::audit

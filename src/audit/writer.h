#pragma once
// The audit log writer: one JSON line per record, appended and fsync'd, rotated by size.
// A record that cannot be written (full disk, read-only file system, no permission) is
// kept in memory and written first once writing works again; the failure is logged once
// per streak and counted. Nothing is ever dropped or truncated without a log line saying so,
// and nothing here throws: auditing must never stop the daemon.
#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "audit/record.h"
#include "export/prometheus_text.h"

namespace gpureap::audit {

struct AuditLogSettings {
  std::string path = "/var/log/gpureap/audit.jsonl";
  uint64_t max_bytes = 64ull << 20;  // a write that would grow the file past this rotates first
  unsigned keep = 5;                 // rotated files kept (PATH.1 … PATH.keep); at least 1
};

struct AuditLogCounters {
  uint64_t records_written = 0;
  uint64_t write_errors = 0;     // failed attempts (open, write, fsync, rotate)
  uint64_t records_dropped = 0;  // lost: the queue was full, or unwritten at shutdown
  size_t pending = 0;            // waiting in memory for the file to be writable
};

class AuditLog {
 public:
  static constexpr size_t kDefaultMaxPending = 10000;

  explicit AuditLog(AuditLogSettings settings, size_t max_pending = kDefaultMaxPending);
  // close(), for whoever has not called it.
  ~AuditLog();
  AuditLog(const AuditLog&) = delete;
  AuditLog& operator=(const AuditLog&) = delete;

  // Writes the records that wait, then this one. True when everything is on disk; false when
  // the record waits in memory (the failure is logged and counted).
  bool append(const Record& record) noexcept;
  // Retries the records that wait, without a new one (e.g. once per daemon tick).
  bool flush() noexcept;
  // Makes a last attempt to write what waits; what still cannot be written is logged as lost
  // and forgotten. The daemon calls it as it stops, since it exits without destructors.
  void close() noexcept;
  // New settings (SIGHUP). The next write uses them; waiting records are retried at once.
  void reconfigure(AuditLogSettings settings) noexcept;

  AuditLogSettings settings() const;
  AuditLogCounters counters() const;
  // gpureap_audit_records_total, gpureap_audit_write_errors_total,
  // gpureap_audit_records_dropped_total, gpureap_audit_pending_records.
  void add_metrics(std::vector<exporter::MetricFamily>& out) const;

 private:
  struct Pending {
    std::string line;  // with its newline
    std::chrono::system_clock::time_point time;
  };
  struct Failure {
    std::string what;  // "write to", "open", ...
    int error = 0;
  };
  struct OpenFile {
    int fd = -1;
    uint64_t size = 0;
    bool regular = false;  // only a regular file is rotated (not /dev/null, a FIFO ...)
  };

  void enqueue_locked(Pending pending);
  bool write_pending_locked();
  // Writes what waits (after a note of any records dropped); the failure, if any.
  std::optional<Failure> write_lines_locked();
  std::optional<Failure> open_locked(OpenFile& file);
  bool rotate_locked(uint64_t size);
  std::string gap_line_locked() const;
  void note_failure_locked(const Failure& failure);
  void note_success_locked();
  // Copies the counters for counters() and /metrics, which must not wait for a write (an
  // fsync on a failing disk can take long).
  void publish_locked();

  mutable std::mutex mutex_;
  AuditLogSettings settings_;
  size_t max_pending_;
  std::deque<Pending> pending_;
  AuditLogCounters counters_;
  mutable std::mutex published_mutex_;  // guards published_; taken inside mutex_, never around it
  AuditLogCounters published_;

  // The current streak of failures: logged when it starts and when it ends.
  bool failing_ = false;
  uint64_t failed_attempts_ = 0;
  bool dropping_ = false;
  bool rotation_failing_ = false;
  // Records dropped since the last successful write: the log gets a line saying so.
  uint64_t gap_records_ = 0;
  std::chrono::system_clock::time_point gap_first_, gap_last_;
  std::string last_error_;
};

}  // namespace gpureap::audit

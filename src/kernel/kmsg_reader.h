#pragma once
// Reads the kernel log from where the last read stopped: /dev/kmsg (a character device) record
// by record, without blocking, or a saved log (a regular file, `--kmsg FILE`) by offset, so a
// follower only ever reads what is new. Reading /dev/kmsg needs root or CAP_SYSLOG: without
// them it is a problem to report once, not an error to stop on.
//
// Bounded whatever the path names: a character device is read only when it is the kernel log
// (char 1:11; not /dev/zero, which never ends, nor /dev/urandom); a line longer than
// kMaxRecordBytes is cut there, a record's continuation lines past kMaxContinuationLines dropped
// (the kernel's own records are at most a few KiB); one call reads at most kMaxBytesPerPass, and a
// saved log no further than it was long when the call began, so a log that grows fast is read over
// several calls. Memory: a read buffer of kReadChunk and at most one cut line, however long the
// log's lines are.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "kernel/kmsg_record.h"

namespace gpureap::kernel {

class KmsgReader {
 public:
  static constexpr size_t kMaxRecordBytes = 16 * 1024;  // as /dev/kmsg's own read buffer
  static constexpr size_t kReadChunk = 64 * 1024;
  static constexpr uint64_t kMaxBytesPerPass = uint64_t{64} << 20;
  static constexpr size_t kMaxContinuationLines = 32;  // per record

  explicit KmsgReader(std::string path);
  ~KmsgReader();
  KmsgReader(const KmsgReader&) = delete;
  KmsgReader& operator=(const KmsgReader&) = delete;
  KmsgReader(KmsgReader&& other) noexcept;
  KmsgReader& operator=(KmsgReader&&) = delete;

  // Hands every record written since the last call to `each` (everything the log holds on the
  // first call), and returns how many. Opens the log on the first call, and again after a
  // failure, so a log that appears later is read then.
  uint64_t read_new(const std::function<void(const KmsgRecord&)>& each);

  // Why the log cannot be read (unset while it can): what failed, why, and what to do.
  const std::optional<std::string>& problem() const { return problem_; }
  bool readable() const { return fd_ >= 0; }
  uint64_t malformed() const { return lines_.malformed(); }
  // Records the kernel overwrote before they could be read (/dev/kmsg's EPIPE).
  uint64_t lost() const { return lost_; }
  const std::string& path() const { return path_; }
  // Lines cut at kMaxRecordBytes so far.
  uint64_t cut_lines() const { return cut_lines_; }
  // Bytes of an unfinished line held until its end is read (at most kMaxRecordBytes).
  size_t held_bytes() const { return lines_.pending_bytes(); }

 private:
  bool open_log();
  uint64_t read_device(const std::function<void(const KmsgRecord&)>& each);
  uint64_t read_file(const std::function<void(const KmsgRecord&)>& each);
  // Feeds the parser, cutting each line at kMaxRecordBytes.
  uint64_t feed(std::string_view bytes, const std::function<void(const KmsgRecord&)>& each);

  std::string path_;
  int fd_ = -1;
  bool device_ = false;
  uint64_t offset_ = 0;  // a regular file: the bytes already parsed (or held as a partial line)
  KmsgLineParser lines_;
  std::optional<std::string> problem_;
  uint64_t lost_ = 0;
  size_t line_bytes_ = 0;  // of the line being fed, so far
  bool cutting_ = false;   // the line being fed was cut: its rest is dropped up to its newline
  uint64_t cut_lines_ = 0;
  size_t continuations_ = 0;  // continuation lines since the latest record's first line
};

}  // namespace gpureap::kernel

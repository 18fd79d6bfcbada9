#pragma once
// Reads the kernel log from where the last read stopped: /dev/kmsg (a character device) record
// by record, without blocking, or a saved log (a regular file, `--kmsg FILE`) by offset, so a
// follower only ever reads what is new. Reading /dev/kmsg needs root or CAP_SYSLOG (where
// kernel.dmesg_restrict is set): that is a problem to report once, not an error to stop on.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "kernel/kmsg_record.h"

namespace gpureap::kernel {

class KmsgReader {
 public:
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

 private:
  bool open_log();
  uint64_t read_device(const std::function<void(const KmsgRecord&)>& each);
  uint64_t read_file(const std::function<void(const KmsgRecord&)>& each);

  std::string path_;
  int fd_ = -1;
  bool device_ = false;
  uint64_t offset_ = 0;  // a regular file: the bytes already parsed (or held as a partial line)
  KmsgLineParser lines_;
  std::optional<std::string> problem_;
  uint64_t lost_ = 0;
};

}  // namespace gpureap::kernel

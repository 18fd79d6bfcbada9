#pragma once
// The kernel log's record format, as /dev/kmsg gives it (Documentation/ABI/testing/dev-kmsg):
//   "prio,seq,usec,flags[,...];message\n" then zero or more " KEY=VALUE\n" continuation lines
// (prio = facility * 8 + level; the message has non-printable bytes escaped as \xNN). A saved
// log (`cat /dev/kmsg > file`) is the same records one after another. Pure text: no reading.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpureap::kernel {

struct KmsgRecord {
  unsigned facility = 0;
  unsigned level = 0;  // 0 emergency ... 7 debug
  uint64_t seq = 0;
  uint64_t usec = 0;      // since boot (the kernel's monotonic log clock)
  bool fragment = false;  // flag 'c': a fragment of a line printed in pieces
  std::string text;
  std::vector<std::string> dict;  // the continuation lines, without their leading space
};

// One header line ("6,1234,5678901,-;text"), without its newline. Empty for anything else.
std::optional<KmsgRecord> parse_kmsg_header(std::string_view line);

// Records out of complete lines, for text that arrives in pieces: feed() takes any bytes and
// keeps a trailing partial line for the next call; a record is handed out once the next
// header (or finish()) shows that no more continuation lines follow it.
class KmsgLineParser {
 public:
  // Returns the records completed by these bytes.
  std::vector<KmsgRecord> feed(std::string_view bytes);
  // The record still waiting for continuation lines, now: a follower at the end of what has
  // been written hands it out (its late continuation lines are then dropped quietly).
  std::vector<KmsgRecord> take_open();
  // take_open(), after parsing a final line that has no newline (the end of a whole text).
  std::vector<KmsgRecord> finish();
  uint64_t malformed() const { return malformed_; }  // lines that were neither
  // Bytes of a partial line held back.
  size_t pending_bytes() const { return partial_.size(); }

 private:
  void line(std::string_view l, std::vector<KmsgRecord>& out);
  std::string partial_;
  std::optional<KmsgRecord> open_;
  uint64_t malformed_ = 0;
  bool seen_record_ = false;
};

// Every record of a whole text (a saved log, a test fixture).
struct KmsgParse {
  std::vector<KmsgRecord> records;
  uint64_t malformed = 0;
};
KmsgParse parse_kmsg_text(std::string_view text);

}  // namespace gpureap::kernel

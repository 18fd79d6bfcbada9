// The kernel log's record format and the reader that follows it: records and their
// continuation lines, garbage between them, a log that grows, one that is truncated, a large one.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "backend/registry.h"
#include "kernel/gpu_events.h"
#include "kernel/kmsg_reader.h"
#include "kernel/kmsg_record.h"

namespace gpureap::kernel {
namespace {

namespace fs = std::filesystem;

// The kernel-log parsers of the built-in backends (NVIDIA's Xids).
KernelLogParsers builtin_parsers() {
  return backend::kernel_log_parsers(backend::builtin_backends());
}

class TempLog {
 public:
  TempLog() {
    path_ = (fs::temp_directory_path() /
             ("gpureap-kmsg-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++)))
                .string();
    std::ofstream(path_, std::ios::trunc);
  }
  ~TempLog() { std::remove(path_.c_str()); }
  void append(const std::string& text) {
    std::ofstream f(path_, std::ios::app | std::ios::binary);
    f << text;
  }
  void replace(const std::string& text) {
    std::ofstream f(path_, std::ios::trunc | std::ios::binary);
    f << text;
  }
  const std::string& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  std::string path_;
};

TEST(KernelKmsg, HeaderFieldsAndFlags) {
  auto r = parse_kmsg_header("4,1234,5678901,-;NVRM: hello, world; really");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->facility, 0u);
  EXPECT_EQ(r->level, 4u);
  EXPECT_EQ(r->seq, 1234u);
  EXPECT_EQ(r->usec, 5678901u);
  EXPECT_FALSE(r->fragment);
  EXPECT_EQ(r->text, "NVRM: hello, world; really");  // only the first ';' ends the prefix
  auto c = parse_kmsg_header("30,7,100,c,caller=T12;part");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->facility, 3u);
  EXPECT_EQ(c->level, 6u);
  EXPECT_TRUE(c->fragment);
  auto bare = parse_kmsg_header("6,8,200;no flags");
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->usec, 200u);
}

TEST(KernelKmsg, GarbageIsNoRecord) {
  for (const char* bad : {"", ";", "x,1,2,-;t", "6,,2,-;t", "6,1,-;t", "6,1,2,-", "-6,1,2,-;t",
                          "6,1,99999999999999999999999,-;t", "[  12.345] NVRM: Xid", " KEY=v"})
    EXPECT_FALSE(parse_kmsg_header(bad)) << bad;
}

TEST(KernelKmsg, ContinuationLinesBelongToTheRecordBefore) {
  auto p = parse_kmsg_text(
      " ORPHAN=continuation before any record\n"
      "6,1,10,-;first\n"
      " SUBSYSTEM=pci\n"
      " DEVICE=+pci:0000:3b:00.0\n"
      "not a record at all\n"
      "6,2,20,-;second\n"
      "3,3,30,-;third without newline");
  ASSERT_EQ(p.records.size(), 3u);
  EXPECT_EQ(p.records[0].text, "first");
  EXPECT_EQ(p.records[0].dict,
            (std::vector<std::string>{"SUBSYSTEM=pci", "DEVICE=+pci:0000:3b:00.0"}));
  EXPECT_TRUE(p.records[1].dict.empty());
  EXPECT_EQ(p.records[2].text, "third without newline");
  EXPECT_EQ(p.malformed, 2u);  // the orphan continuation and the stray line
}

TEST(KernelKmsg, PiecesSplitAnywhereGiveTheSameRecords) {
  const std::string text = "6,1,10,-;alpha\n SUB=x\n6,2,20,-;beta\n6,3,30,-;gamma\n";
  auto whole = parse_kmsg_text(text);
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    KmsgLineParser p;
    auto a = p.feed(text.substr(0, cut));
    auto b = p.feed(text.substr(cut));
    auto c = p.finish();
    a.insert(a.end(), b.begin(), b.end());
    a.insert(a.end(), c.begin(), c.end());
    ASSERT_EQ(a.size(), whole.records.size()) << cut;
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].text, whole.records[i].text);
      EXPECT_EQ(a[i].dict, whole.records[i].dict);
    }
  }
}

TEST(KernelKmsg, ReaderFollowsAGrowingFileAndReadsOnlyWhatIsNew) {
  TempLog log;
  log.append("6,1,10,-;one\n6,2,20,-;tw");
  KmsgReader reader(log.path());
  std::vector<std::string> seen;
  auto collect = [&](const KmsgRecord& r) { seen.push_back(r.text); };
  EXPECT_EQ(reader.read_new(collect), 1u);  // "tw" is a partial line: not yet a record
  EXPECT_EQ(seen, std::vector<std::string>{"one"});
  EXPECT_EQ(reader.read_new(collect), 0u);
  log.append("o\n6,3,30,-;three\n");
  EXPECT_EQ(reader.read_new(collect), 2u);
  EXPECT_EQ(seen, (std::vector<std::string>{"one", "two", "three"}));
  // A shorter file was replaced: read from its start again.
  log.replace("6,1,5,-;after reboot\n");
  EXPECT_EQ(reader.read_new(collect), 1u);
  EXPECT_EQ(seen.back(), "after reboot");
  EXPECT_FALSE(reader.problem());
}

TEST(KernelKmsg, AMissingLogIsAProblemNotACrash) {
  KmsgReader reader("/nonexistent/kmsg");
  EXPECT_EQ(reader.read_new([](const KmsgRecord&) {}), 0u);
  ASSERT_TRUE(reader.problem());
  EXPECT_NE(reader.problem()->find("/nonexistent/kmsg"), std::string::npos);
  EXPECT_NE(reader.problem()->find("--kmsg"), std::string::npos);
  KmsgReader dir("/");
  dir.read_new([](const KmsgRecord&) {});
  ASSERT_TRUE(dir.problem());
}

TEST(KernelKmsg, TheRealDeviceIsReadRecordByRecordOrTheProblemIsNamed) {
  KmsgReader reader("/dev/kmsg");
  uint64_t n = reader.read_new([](const KmsgRecord&) {});
  if (!reader.readable()) {
    ASSERT_TRUE(reader.problem());
    GTEST_SKIP() << *reader.problem();
  }
  EXPECT_GT(n, 0u);  // the kernel has logged at least its banner
  // A second read returns only what the kernel logged since: nothing is read twice.
  EXPECT_LT(reader.read_new([](const KmsgRecord&) {}), n);
}

// A 10 MB log of ordinary noise with Xids spread through it, generated here (never committed).
TEST(KernelKmsg, ATenMegabyteLogIsReadInPiecesAndEveryXidFound) {
  TempLog log;
  std::string chunk;
  uint64_t seq = 0;
  size_t xids = 0;
  {
    std::ofstream f(log.path(), std::ios::binary);
    size_t written = 0;
    while (written < 10u * 1000 * 1000) {
      chunk.clear();
      for (int i = 0; i < 1000; ++i) {
        ++seq;
        if (seq % 997 == 0) {
          chunk += "4," + std::to_string(seq) + "," + std::to_string(seq * 1000) +
                   ",-;NVRM: Xid (PCI:0000:3b:00): 31, pid=4242, name=python, Ch 00000008\n";
          ++xids;
        } else {
          chunk += "6," + std::to_string(seq) + "," + std::to_string(seq * 1000) +
                   ",-;eth0: link is up at 100 Gbps, full duplex, flow control rx/tx\n"
                   " SUBSYSTEM=net\n";
        }
      }
      f << chunk;
      written += chunk.size();
    }
  }
  auto events = read_kernel_log(log.path(), 1'700'000'000, {}, builtin_parsers());
  EXPECT_TRUE(events.read);
  EXPECT_EQ(events.records, seq);
  EXPECT_EQ(events.malformed, 0u);
  ASSERT_EQ(events.events.size(), xids);
  EXPECT_EQ(events.events.back().seq, (seq / 997) * 997);
}

// `--kmsg` takes the kernel log device by its number, or a regular file: /dev/zero would grow
// the reader without end, /dev/urandom would never return.
TEST(KernelKmsg, OtherCharacterDevicesAreRefused) {
  for (const char* path : {"/dev/zero", "/dev/urandom", "/dev/null"}) {
    KmsgReader reader(path);
    EXPECT_EQ(reader.read_new([](const KmsgRecord&) {}), 0u) << path;
    EXPECT_FALSE(reader.readable()) << path;
    ASSERT_TRUE(reader.problem()) << path;
    EXPECT_NE(reader.problem()->find("neither the kernel's log device"), std::string::npos)
        << *reader.problem();
    EXPECT_EQ(reader.held_bytes(), 0u);
  }
}

TEST(KernelKmsg, ThePermissionProblemNamesThePrivilegeNotASysctl) {
  TempLog log;
  log.append("6,1,10,-;one\n");
  ASSERT_EQ(::chmod(log.path().c_str(), 0), 0);
  if (::access(log.path().c_str(), R_OK) == 0) {
    // root reads it anyway: check the wording on a reader that cannot
    GTEST_SKIP() << "root reads a mode 0 file";
  }
  KmsgReader reader(log.path());
  reader.read_new([](const KmsgRecord&) {});
  ASSERT_TRUE(reader.problem());
  EXPECT_NE(reader.problem()->find("root or CAP_SYSLOG"), std::string::npos);
  EXPECT_EQ(reader.problem()->find("sysctl"), std::string::npos);
}

// A saved log whose one line is 64 MiB, written while it is followed: the reader holds at most
// one record's worth of it at any time, cuts the line there, and finds the records after it.
TEST(KernelKmsg, ASixtyFourMebibyteLineCostsOneRecordsWorth) {
  static_assert(KmsgReader::kMaxRecordBytes <= 16 * 1024);
  static_assert(KmsgReader::kReadChunk <= 64 * 1024);
  TempLog log;
  log.append("6,1,10,-;before\n6,2,20,-;");
  KmsgReader reader(log.path());
  std::vector<std::string> seen;
  size_t longest = 0;
  auto collect = [&](const KmsgRecord& r) {
    seen.push_back(r.text.substr(0, 16));
    longest = std::max(longest, r.text.size());
  };
  reader.read_new(collect);
  const std::string piece(size_t{1} << 20, 'A');
  for (int i = 0; i < 64; ++i) {
    log.append(piece);
    reader.read_new(collect);
    EXPECT_LE(reader.held_bytes(), KmsgReader::kMaxRecordBytes) << "after " << i + 1 << " MiB";
  }
  log.append("\n6,3,30,-;after\n");
  reader.read_new(collect);
  EXPECT_EQ(reader.held_bytes(), 0u);
  EXPECT_EQ(reader.cut_lines(), 1u);
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0], "before");
  EXPECT_EQ(seen[1], std::string(16, 'A'));
  EXPECT_EQ(seen[2], "after");
  EXPECT_LE(longest, KmsgReader::kMaxRecordBytes);
  EXPECT_FALSE(reader.problem());
}

// One pass reads a bounded amount however much was written: the rest comes with the next.
TEST(KernelKmsg, APassReadsABoundedAmount) {
  TempLog log;
  {
    std::ofstream f(log.path(), std::ios::binary);
    const std::string line = "6,1,10,-;" + std::string(1000, 'x') + "\n";
    for (uint64_t written = 0; written < KmsgReader::kMaxBytesPerPass + (1 << 20);
         written += line.size())
      f << line;
  }
  KmsgReader reader(log.path());
  uint64_t first = reader.read_new([](const KmsgRecord&) {});
  uint64_t second = reader.read_new([](const KmsgRecord&) {});
  EXPECT_LE(first * 1010, KmsgReader::kMaxBytesPerPass + 1010);
  EXPECT_GT(second, 0u);
}

// A record's continuation lines are a handful; a flood of them is dropped past the bound.
TEST(KernelKmsg, ARecordKeepsABoundedNumberOfContinuationLines) {
  TempLog log;
  std::string text = "6,1,10,-;flooded\n";
  for (int i = 0; i < 10000; ++i) text += " KEY=value\n";
  text += "6,2,20,-;next\n";
  log.append(text);
  KmsgReader reader(log.path());
  std::vector<KmsgRecord> seen;
  reader.read_new([&](const KmsgRecord& r) { seen.push_back(r); });
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].dict.size(), KmsgReader::kMaxContinuationLines);
  EXPECT_EQ(seen[1].text, "next");
}

}  // namespace
}  // namespace gpureap::kernel

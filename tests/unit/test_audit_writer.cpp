#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "audit/reader.h"
#include "audit/writer.h"
#include "audit_test_support.h"

namespace gpureap::audit {
namespace {

namespace fs = std::filesystem;
using test::file_lines;
using test::numbered_record;
using test::occurrences;
using test::StderrCapture;
using test::TempDir;

// Every record read back, by attempt number, in file order.
std::vector<unsigned> read_back(const std::string& path, size_t* malformed = nullptr) {
  auto contents = read_audit_log(path);
  EXPECT_TRUE(contents) << contents.error().message;
  std::vector<unsigned> out;
  if (!contents) return out;
  for (const auto& r : contents->records)
    if (r.event != "records-dropped") out.push_back(r.attempt);
  if (malformed) *malformed = contents->malformed_lines;
  return out;
}

std::vector<unsigned> one_to(unsigned n) {
  std::vector<unsigned> out;
  for (unsigned i = 1; i <= n; ++i) out.push_back(i);
  return out;
}

mode_t mode_of(const std::string& path) {
  struct stat st {};
  ::stat(path.c_str(), &st);
  return st.st_mode & 07777;
}

size_t line_size() {
  return to_json_line(numbered_record(100)).size();
}

TEST(AuditWriter, CreatesTheDirectoriesAndAppendsOneLinePerRecord) {
  TempDir dir;
  std::string path = dir.file("var/log/gpureap/audit.jsonl");
  mode_t old_umask = ::umask(022);
  AuditLog log({path, 1 << 20, 3});
  EXPECT_TRUE(log.append(numbered_record(1)));
  EXPECT_TRUE(log.append(numbered_record(2)));
  ::umask(old_umask);
  EXPECT_EQ(mode_of(dir.file("var/log/gpureap")), 0750u);
  EXPECT_EQ(mode_of(path), 0640u);
  auto lines = file_lines(path);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0] + "\n", to_json_line(numbered_record(1)));
  EXPECT_EQ(lines[1] + "\n", to_json_line(numbered_record(2)));
  auto c = log.counters();
  EXPECT_EQ(c.records_written, 2u);
  EXPECT_EQ(c.write_errors, 0u);
  EXPECT_EQ(c.pending, 0u);
}

TEST(AuditWriter, ASymlinkOrANonRegularFileAtThePathIsNeverWrittenThrough) {
  TempDir dir;
  std::string victim = dir.file("victim"), path = dir.file("audit.jsonl");
  std::ofstream(victim) << "precious\n";
  fs::create_symlink(victim, path);
  StderrCapture err;
  {
    AuditLog log({path, 1 << 20, 2});
    EXPECT_FALSE(log.append(numbered_record(1)));
    EXPECT_GT(log.counters().write_errors, 0u);
  }
  std::ifstream in(victim);
  std::string content((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(content, "precious\n") << "nothing appended through the link";
  fs::remove(path);
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  AuditLog fifo({path, 1 << 20, 2});
  EXPECT_FALSE(fifo.append(numbered_record(2)));  // and it does not block
}

TEST(AuditWriter, AppendsToWhatIsThereNeverTruncates) {
  TempDir dir;
  std::string path = dir.file("audit.jsonl");
  std::ofstream(path) << to_json_line(numbered_record(1));
  AuditLog log({path, 1 << 20, 3});
  ASSERT_TRUE(log.append(numbered_record(2)));
  EXPECT_EQ(read_back(path), (std::vector<unsigned>{1, 2}));
}

TEST(AuditWriter, RotatesBySizeAndLosesNothingWithinKeep) {
  TempDir dir;
  std::string path = dir.file("audit.jsonl");
  // Three lines per file: 4 files (live + keep 3) hold 12 records.
  AuditLog log({path, 3 * line_size() + 10, 3});
  for (unsigned i = 1; i <= 12; ++i) ASSERT_TRUE(log.append(numbered_record(i)));
  for (const auto& f : {path, path + ".1", path + ".2", path + ".3"}) {
    EXPECT_TRUE(fs::exists(f)) << f;
    EXPECT_LE(fs::file_size(f), 3 * line_size() + 10) << f;
  }
  EXPECT_FALSE(fs::exists(path + ".4"));
  EXPECT_EQ(read_back(path), one_to(12));
  EXPECT_EQ(file_lines(path + ".3").size(), 3u);
}

TEST(AuditWriter, KeepIsHonouredAndRemovalsAreLogged) {
  TempDir dir;
  std::string path = dir.file("audit.jsonl");
  StderrCapture err;
  {
    AuditLog log({path, 2 * line_size() + 10, 2});
    for (unsigned i = 1; i <= 10; ++i) ASSERT_TRUE(log.append(numbered_record(i)));
  }
  std::string logged = err.text();
  EXPECT_FALSE(fs::exists(path + ".3"));
  // 10 records, 2 per file, 3 files: the first 4 were rotated out.
  EXPECT_EQ(read_back(path), (std::vector<unsigned>{5, 6, 7, 8, 9, 10}));
  EXPECT_EQ(occurrences(logged, "gpureap: audit log: removed " + path + ".2"), 2u) << logged;
  EXPECT_EQ(occurrences(logged, "gpureap: error: "), 0u) << logged;
}

TEST(AuditWriter, ASmallerKeepAfterAReloadRemovesTheExcess) {
  TempDir dir;
  std::string path = dir.file("audit.jsonl");
  AuditLog log({path, line_size() + 10, 5});
  for (unsigned i = 1; i <= 6; ++i) ASSERT_TRUE(log.append(numbered_record(i)));
  ASSERT_TRUE(fs::exists(path + ".5"));
  StderrCapture err;
  log.reconfigure({path, line_size() + 10, 2});
  ASSERT_TRUE(log.append(numbered_record(7)));
  std::string logged = err.text();
  for (int n = 3; n <= 5; ++n) EXPECT_FALSE(fs::exists(path + "." + std::to_string(n))) << n;
  EXPECT_EQ(read_back(path), (std::vector<unsigned>{5, 6, 7}));
  EXPECT_NE(logged.find("removed " + path + ".5"), std::string::npos) << logged;
}

TEST(AuditWriter, ALineLargerThanMaxBytesIsStillWritten) {
  TempDir dir;
  std::string path = dir.file("audit.jsonl");
  AuditLog log({path, 16, 2});
  for (unsigned i = 1; i <= 3; ++i) ASSERT_TRUE(log.append(numbered_record(i)));
  EXPECT_EQ(read_back(path), one_to(3));
  EXPECT_EQ(file_lines(path).size(), 1u);
}

TEST(AuditWriter, AHalfWrittenLineDoesNotSpoilTheNext) {
  TempDir dir;
  std::string path = dir.file("audit.jsonl");
  std::string cut = to_json_line(numbered_record(1));
  std::ofstream(path) << cut.substr(0, cut.size() / 2);
  AuditLog log({path, 1 << 20, 2});
  ASSERT_TRUE(log.append(numbered_record(2)));
  size_t malformed = 0;
  EXPECT_EQ(read_back(path, &malformed), (std::vector<unsigned>{2}));
  EXPECT_EQ(malformed, 1u);
  EXPECT_EQ(file_lines(path).size(), 2u);
}

// The parent of the path is a regular file: open fails (ENOTDIR) as it would on a read-only
// or full file system, and root cannot be kept out of a directory by its mode.
TEST(AuditWriter, AFailureKeepsRecordsAndRecoveryWritesThemFirst) {
  TempDir dir;
  std::string blocker = dir.file("logs");
  std::ofstream(blocker) << "not a directory";
  std::string path = blocker + "/audit.jsonl";
  StderrCapture err;
  AuditLog log({path, 1 << 20, 2});
  for (unsigned i = 1; i <= 3; ++i) EXPECT_FALSE(log.append(numbered_record(i)));
  auto c = log.counters();
  EXPECT_EQ(c.pending, 3u);
  EXPECT_EQ(c.records_written, 0u);
  EXPECT_EQ(c.write_errors, 3u);
  EXPECT_EQ(c.records_dropped, 0u);

  fs::remove(blocker);  // the operator fixes it
  EXPECT_TRUE(log.append(numbered_record(4)));
  std::string logged = err.text();
  EXPECT_EQ(read_back(path), one_to(4));
  c = log.counters();
  EXPECT_EQ(c.pending, 0u);
  EXPECT_EQ(c.records_written, 4u);
  // One error for the streak, saying what, why and what to do; one notice when it ends.
  EXPECT_EQ(occurrences(logged, "gpureap: error: "), 1u) << logged;
  EXPECT_NE(logged.find("cannot open " + path + ": Not a directory"), std::string::npos) << logged;
  EXPECT_NE(logged.find("fix audit_log"), std::string::npos) << logged;
  EXPECT_NE(logged.find("gpureap: audit log: writing to " + path + " again"), std::string::npos)
      << logged;
}

TEST(AuditWriter, AnUnusablePathIsReportedOnceAndRecoveredFrom) {
  // A symlink at the path (here to /dev/full) is refused, like any path that cannot be written.
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  TempDir dir;
  std::string path = dir.file("audit.jsonl");
  fs::create_symlink("/dev/full", path);
  StderrCapture err;
  AuditLog log({path, 1 << 20, 2});
  EXPECT_FALSE(log.append(numbered_record(1)));
  EXPECT_FALSE(log.append(numbered_record(2)));
  EXPECT_FALSE(log.flush());
  EXPECT_EQ(log.counters().pending, 2u);
  EXPECT_EQ(log.counters().write_errors, 3u);

  fs::remove(path);
  EXPECT_TRUE(log.flush());
  std::string logged = err.text();
  EXPECT_EQ(read_back(path), one_to(2));
  EXPECT_EQ(occurrences(logged, "gpureap: error: "), 1u) << logged;
  EXPECT_NE(logged.find("symbolic links"), std::string::npos) << logged;
}

TEST(AuditWriter, ABoundedQueueDropsTheOldestAndTheLogSaysSo) {
  TempDir dir;
  std::string blocker = dir.file("logs");
  std::ofstream(blocker) << "";
  std::string path = blocker + "/audit.jsonl";
  StderrCapture err;
  AuditLog log({path, 1 << 20, 2}, /*max_pending=*/3);
  for (unsigned i = 1; i <= 5; ++i) EXPECT_FALSE(log.append(numbered_record(i)));
  EXPECT_EQ(log.counters().pending, 3u);
  EXPECT_EQ(log.counters().records_dropped, 2u);

  fs::remove(blocker);
  EXPECT_TRUE(log.flush());
  std::string logged = err.text();
  EXPECT_EQ(read_back(path), (std::vector<unsigned>{3, 4, 5}));
  auto contents = read_audit_log(path);
  ASSERT_TRUE(contents);
  ASSERT_EQ(contents->records.size(), 4u);
  const Record& gap = contents->records.front();
  EXPECT_EQ(gap.event, "records-dropped");
  EXPECT_EQ(gap.outcome, "dropped");
  EXPECT_NE(gap.detail.find("2 audit records"), std::string::npos) << gap.detail;
  EXPECT_EQ(gap.time, numbered_record(2).time) << "the gap is where the dropped records were";
  // A note about no process: its PID and attempt are unknown, written null, never 0.
  std::ifstream in(path);
  std::string first_line;
  std::getline(in, first_line);
  auto j = nlohmann::json::parse(first_line);
  EXPECT_TRUE(j["process"]["pid"].is_null()) << first_line;
  EXPECT_TRUE(j["attempt"].is_null()) << first_line;
  EXPECT_EQ(occurrences(logged, "the oldest are dropped"), 1u) << logged;
}

TEST(AuditWriter, RecordsUnwrittenAtExitAreReportedAsLost) {
  TempDir dir;
  std::string blocker = dir.file("logs");
  std::ofstream(blocker) << "";
  StderrCapture err;
  {
    AuditLog log({blocker + "/audit.jsonl", 1 << 20, 2});
    log.append(numbered_record(1));
    log.append(numbered_record(2));
  }
  std::string logged = err.text();
  EXPECT_NE(logged.find("lost 2 records that could not be written"), std::string::npos) << logged;
}

// The daemon closes the log as it stops (it exits without destructors): the loss is said
// then, once, and not again by the destructor.
TEST(AuditWriter, CloseReportsTheLossOnce) {
  TempDir dir;
  std::string blocker = dir.file("logs");
  std::ofstream(blocker) << "";
  StderrCapture err;
  {
    AuditLog log({blocker + "/audit.jsonl", 1 << 20, 2});
    log.append(numbered_record(1));
    log.close();
    EXPECT_NE(err.text().find("lost 1 record that could not be written"), std::string::npos)
        << err.text();
    EXPECT_EQ(log.counters().records_dropped, 1u);
  }
  EXPECT_EQ(occurrences(err.text(), "lost 1 record"), 1u) << err.text();
}

TEST(AuditWriter, ReconfigureMovesTheLogAndRetriesWhatWaits) {
  TempDir dir;
  std::string blocker = dir.file("logs");
  std::ofstream(blocker) << "";
  AuditLog log({blocker + "/audit.jsonl", 1 << 20, 2});
  EXPECT_FALSE(log.append(numbered_record(1)));
  std::string fixed = dir.file("elsewhere/audit.jsonl");
  log.reconfigure({fixed, 1 << 20, 2});
  EXPECT_EQ(log.counters().pending, 0u);
  EXPECT_TRUE(log.append(numbered_record(2)));
  EXPECT_EQ(read_back(fixed), one_to(2));
  EXPECT_EQ(log.settings().path, fixed);
}

TEST(AuditWriter, ConcurrentAppendsAreWholeLinesAndAllThere) {
  TempDir dir;
  std::string path = dir.file("audit.jsonl");
  constexpr unsigned kThreads = 4, kEach = 100;
  {
    AuditLog log({path, 40 * line_size(), 50});
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < kThreads; ++t)
      threads.emplace_back([&log, t] {
        for (unsigned i = 1; i <= kEach; ++i) log.append(numbered_record(t * kEach + i));
      });
    for (auto& th : threads) th.join();
    EXPECT_EQ(log.counters().records_written, kThreads * kEach);
  }
  size_t malformed = 0;
  auto got = read_back(path, &malformed);
  EXPECT_EQ(malformed, 0u);
  EXPECT_EQ(got.size(), kThreads * kEach);
  EXPECT_EQ(std::set<unsigned>(got.begin(), got.end()).size(), kThreads * kEach);
}

TEST(AuditWriter, Metrics) {
  TempDir dir;
  std::string blocker = dir.file("logs");
  std::ofstream(blocker) << "";
  StderrCapture err;
  AuditLog log({blocker + "/audit.jsonl", 1 << 20, 2}, 1);
  log.append(numbered_record(1));
  log.append(numbered_record(2));
  std::vector<exporter::MetricFamily> families;
  log.add_metrics(families);
  auto value = [&](const std::string& name) -> double {
    for (const auto& f : families)
      if (f.name == name && f.samples.size() == 1) return f.samples[0].value;
    ADD_FAILURE() << "no " << name;
    return -1;
  };
  EXPECT_EQ(value("gpureap_audit_records_total"), 0);
  EXPECT_EQ(value("gpureap_audit_write_errors_total"), 2);
  EXPECT_EQ(value("gpureap_audit_records_dropped_total"), 1);
  EXPECT_EQ(value("gpureap_audit_pending_records"), 1);
  std::string text = exporter::render(families);
  EXPECT_NE(text.find("# TYPE gpureap_audit_records_total counter"), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE gpureap_audit_pending_records gauge"), std::string::npos) << text;
}

}  // namespace
}  // namespace gpureap::audit

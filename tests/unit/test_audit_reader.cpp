#include <gtest/gtest.h>

#include <fstream>

#include "audit/reader.h"
#include "audit_test_support.h"

namespace gpureap::audit {
namespace {

using test::at_ms;
using test::numbered_record;
using test::TempDir;

void write_lines(const std::string& path, const std::vector<std::string>& lines) {
  std::ofstream out(path);
  for (const auto& l : lines) out << l << (l.empty() || l.back() != '\n' ? "\n" : "");
}

std::vector<unsigned> attempts(const std::vector<Record>& records) {
  std::vector<unsigned> out;
  for (const auto& r : records) out.push_back(r.attempt);
  return out;
}

TEST(AuditReader, NoFilesMeansNoLogYet) {
  TempDir dir;
  auto contents = read_audit_log(dir.file("audit.jsonl"));
  ASSERT_TRUE(contents) << contents.error().message;
  EXPECT_TRUE(contents->files.empty());
  EXPECT_TRUE(contents->records.empty());
}

TEST(AuditReader, ReadsRotatedFilesOldestFirst) {
  TempDir dir;
  std::string path = dir.file("audit.jsonl");
  write_lines(path + ".2", {to_json_line(numbered_record(1)), to_json_line(numbered_record(2))});
  write_lines(path + ".1", {to_json_line(numbered_record(3))});
  write_lines(path, {to_json_line(numbered_record(4)), to_json_line(numbered_record(5))});
  write_lines(path + ".old", {to_json_line(numbered_record(99))});  // not one of its files
  auto contents = read_audit_log(path);
  ASSERT_TRUE(contents) << contents.error().message;
  EXPECT_EQ(attempts(contents->records), (std::vector<unsigned>{1, 2, 3, 4, 5}));
  EXPECT_EQ(contents->files, (std::vector<std::string>{path + ".2", path + ".1", path}));
  EXPECT_EQ(contents->malformed_lines, 0u);
}

TEST(AuditReader, RotatedFilesWithoutTheLiveOneAreRead) {
  TempDir dir;
  std::string path = dir.file("audit.jsonl");
  write_lines(path + ".1", {to_json_line(numbered_record(7))});
  auto contents = read_audit_log(path);
  ASSERT_TRUE(contents);
  EXPECT_EQ(attempts(contents->records), (std::vector<unsigned>{7}));
  EXPECT_EQ(contents->files, (std::vector<std::string>{path + ".1"}));
}

TEST(AuditReader, MalformedLinesAreCountedAndSkipped) {
  TempDir dir;
  std::string path = dir.file("audit.jsonl");
  std::string cut = to_json_line(numbered_record(2));
  cut.resize(cut.size() / 2);  // a write a full disk cut short
  write_lines(path,
              {to_json_line(numbered_record(1)), cut, "", R"({"time":"2026-05-28T20:26:40Z"})",
               to_json_line(numbered_record(3)), "[1,2]"});
  auto contents = read_audit_log(path);
  ASSERT_TRUE(contents) << contents.error().message;
  EXPECT_EQ(attempts(contents->records), (std::vector<unsigned>{1, 3}));
  EXPECT_EQ(contents->malformed_lines, 3u) << "a blank line is not malformed";
  ASSERT_TRUE(contents->first_malformed);
  EXPECT_EQ(contents->first_malformed->file, path);
  EXPECT_EQ(contents->first_malformed->line, 2u);
  EXPECT_EQ(contents->first_malformed->reason, "not JSON");
}

TEST(AuditReader, MalformedReasonNamesTheMissingField) {
  TempDir dir;
  std::string path = dir.file("audit.jsonl");
  write_lines(
      path,
      {R"({"time":"2026-05-28T20:26:40Z","event":"action","outcome":"released","process":{"pid":1}})"});
  auto contents = read_audit_log(path);
  ASSERT_TRUE(contents);
  ASSERT_TRUE(contents->first_malformed);
  EXPECT_EQ(contents->first_malformed->reason, "\"policy\" is missing");
}

TEST(AuditReader, SinceKeepsRecordsAtOrAfterIt) {
  TempDir dir;
  std::string path = dir.file("audit.jsonl");
  write_lines(path + ".1",
              {to_json_line(numbered_record(1, 1000)), to_json_line(numbered_record(2, 1000))});
  write_lines(path,
              {to_json_line(numbered_record(3, 1000)), to_json_line(numbered_record(4, 1000))});
  auto contents = read_audit_log(path, at_ms(1002));
  ASSERT_TRUE(contents);
  EXPECT_EQ(attempts(contents->records), (std::vector<unsigned>{2, 3, 4}));
}

TEST(AuditReader, RecordsComeInTimeOrder) {
  TempDir dir;
  std::string path = dir.file("audit.jsonl");
  // Written out of order: queued through a full disk behind a later record, or a clock step.
  write_lines(path, {to_json_line(numbered_record(5)), to_json_line(numbered_record(2)),
                     to_json_line(numbered_record(9))});
  write_lines(path + ".1", {to_json_line(numbered_record(7))});
  auto contents = read_audit_log(path);
  ASSERT_TRUE(contents);
  EXPECT_EQ(attempts(contents->records), (std::vector<unsigned>{2, 5, 7, 9}));
}

TEST(AuditReader, AnUnreadableFileIsAnErrorNamingIt) {
  TempDir dir;
  std::string path = dir.file("audit.jsonl");
  std::filesystem::create_directory(path);
  auto contents = read_audit_log(path);
  ASSERT_FALSE(contents);
  EXPECT_NE(contents.error().message.find(path), std::string::npos) << contents.error().message;
  EXPECT_NE(contents.error().message.find("Is a directory"), std::string::npos)
      << contents.error().message;
}

}  // namespace
}  // namespace gpureap::audit

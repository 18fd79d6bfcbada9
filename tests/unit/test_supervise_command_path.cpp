#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "supervise/command_path.h"

namespace gpureap::supervise {
namespace {

class SuperviseCommandPath : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/gpureap-cmdpath-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    root_ = pattern;
    std::filesystem::create_directories(root_ + "/a");
    std::filesystem::create_directories(root_ + "/b");
    std::filesystem::create_directories(root_ + "/b/dir");
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  std::string file(const std::string& rel, mode_t mode) {
    std::string p = root_ + "/" + rel;
    std::ofstream(p) << "#!/bin/sh\n";
    ::chmod(p.c_str(), mode);
    return p;
  }
  std::string path_env() const { return root_ + "/a:" + root_ + "/b"; }
  std::string root_;
};

TEST_F(SuperviseCommandPath, FirstExecutableOnPathWins) {
  file("a/tool", 0755);
  file("b/tool", 0755);
  auto r = find_command("tool", path_env());
  ASSERT_TRUE(std::holds_alternative<std::string>(r));
  EXPECT_EQ(std::get<std::string>(r), root_ + "/a/tool");
}

TEST_F(SuperviseCommandPath, NonExecutableIsSkippedButReportedWhenNothingElseRuns) {
  file("a/tool", 0644);
  file("b/tool", 0755);
  EXPECT_EQ(std::get<std::string>(find_command("tool", path_env())), root_ + "/b/tool");
  file("a/only", 0644);
  auto r = find_command("only", path_env());
  ASSERT_TRUE(std::holds_alternative<CommandNotRunnable>(r));
  EXPECT_EQ(std::get<CommandNotRunnable>(r).cause, EndCause::NotExecutable);
  EXPECT_NE(std::get<CommandNotRunnable>(r).error.hint.find("chmod +x"), std::string::npos);
}

TEST_F(SuperviseCommandPath, DirectoriesAreNotCommands) {
  auto r = find_command("dir", path_env());
  ASSERT_TRUE(std::holds_alternative<CommandNotRunnable>(r));
  EXPECT_EQ(std::get<CommandNotRunnable>(r).cause, EndCause::NotFound);
  auto direct = find_command(root_ + "/b/dir", path_env());
  ASSERT_TRUE(std::holds_alternative<CommandNotRunnable>(direct));
  EXPECT_EQ(std::get<CommandNotRunnable>(direct).cause, EndCause::NotExecutable);
}

TEST_F(SuperviseCommandPath, NotFoundNamesThePathSearched) {
  auto r = find_command("nope", path_env());
  ASSERT_TRUE(std::holds_alternative<CommandNotRunnable>(r));
  const auto& bad = std::get<CommandNotRunnable>(r);
  EXPECT_EQ(bad.cause, EndCause::NotFound);
  EXPECT_NE(bad.error.message.find("command not found"), std::string::npos);
  EXPECT_NE(bad.error.hint.find(path_env()), std::string::npos);
}

TEST_F(SuperviseCommandPath, SlashMeansAPathNotASearch) {
  std::string tool = file("b/tool", 0755);
  EXPECT_EQ(std::get<std::string>(find_command(tool, std::string("/nonexistent"))), tool);
  auto r = find_command(root_ + "/a/absent", path_env());
  ASSERT_TRUE(std::holds_alternative<CommandNotRunnable>(r));
  EXPECT_EQ(std::get<CommandNotRunnable>(r).cause, EndCause::NotFound);
}

TEST_F(SuperviseCommandPath, EmptyPathEntryIsTheCurrentDirectory) {
  file("a/here", 0755);
  auto cwd = std::filesystem::current_path();
  std::filesystem::current_path(root_ + "/a");
  auto r = find_command("here", std::string("/nonexistent::/also-not"));
  std::filesystem::current_path(cwd);
  ASSERT_TRUE(std::holds_alternative<std::string>(r));
  EXPECT_EQ(std::get<std::string>(r), "./here");
}

TEST_F(SuperviseCommandPath, UnsetPathIsBinAndUsrBin) {
  auto r = find_command("sh", std::nullopt);
  ASSERT_TRUE(std::holds_alternative<std::string>(r));
  EXPECT_EQ(std::get<std::string>(r), "/bin/sh");
}

TEST_F(SuperviseCommandPath, EmptyCommandIsNotFound) {
  auto r = find_command("", path_env());
  ASSERT_TRUE(std::holds_alternative<CommandNotRunnable>(r));
}

TEST_F(SuperviseCommandPath, HostileNamesAreEscapedInMessages) {
  auto r = find_command("evil\x1b[31m", path_env());
  ASSERT_TRUE(std::holds_alternative<CommandNotRunnable>(r));
  EXPECT_EQ(std::get<CommandNotRunnable>(r).error.message.find('\x1b'), std::string::npos);
}

}  // namespace
}  // namespace gpureap::supervise

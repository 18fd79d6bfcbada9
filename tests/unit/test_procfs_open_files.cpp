// group_open_files (src/procfs/open_files.cpp) on real fds of this process and a forked child:
// dup'd and inherited fds share an open file description, a second open() makes a new one.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "procfs/open_files.h"

namespace gpureap::procfs {
namespace {

core::HostProcess holding(pid_t pid, const std::string& path, std::vector<int> fds) {
  core::HostProcess p;
  p.stat.pid = pid;
  p.stat.state = 'S';
  p.devices.push_back({path, "nvidia", ::makedev(195, 0), true, std::move(fds), std::nullopt});
  p.devices.push_back(
      {"/dev/nvidiactl", "nvidiactl", ::makedev(195, 255), false, {0}, std::nullopt});
  return p;
}

class OpenFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpureap-open-files-XXXXXX";
    int fd = ::mkstemp(tmpl);
    ASSERT_GE(fd, 0);
    path_ = tmpl;
    first_ = fd;
    dup_ = ::dup(first_);
    second_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(second_, 0);
    // The child inherits all three and sleeps until killed.
    child_ = ::fork();
    if (child_ == 0) {
      for (;;) ::pause();
    }
  }
  void TearDown() override {
    if (child_ > 0) {
      ::kill(child_, SIGKILL);
      ::waitpid(child_, nullptr, 0);
    }
    ::close(first_);
    ::close(dup_);
    ::close(second_);
    ::unlink(path_.c_str());
  }
  std::string path_;
  int first_ = -1, dup_ = -1, second_ = -1;
  pid_t child_ = -1;
};

std::optional<std::string> id_of(const core::HostProcess& p, int fd) {
  for (const auto& h : p.devices)
    for (int f : h.fds)
      if (f == fd) return h.open_file;
  return std::nullopt;
}

TEST_F(OpenFiles, DupAndForkShareOneOpenFileASecondOpenIsAnother) {
  pid_t self = ::getpid();
  std::vector<core::HostProcess> ps{
      holding(std::min(self, child_), path_, {first_, dup_, second_}),
      holding(std::max(self, child_), path_, {first_, dup_, second_})};
  ps[0].stat.pid = std::min(self, child_);
  ps[1].stat.pid = std::max(self, child_);
  auto g = group_open_files(ps, true);
  ASSERT_FALSE(g.incomplete) << *g.incomplete;
  for (const auto& p : ps) {
    auto a = id_of(p, first_), b = id_of(p, dup_), c = id_of(p, second_);
    ASSERT_TRUE(a && b && c);
    EXPECT_EQ(*a, *b) << "a dup is the same open file";
    EXPECT_NE(*a, *c) << "a second open() is a new one";
    EXPECT_EQ(*a, *id_of(ps[0], first_)) << "a forked child shares its parent's";
  }
  // One hold per open file description; the file shared by every GPU stays one hold.
  EXPECT_EQ(ps[0].devices.size(), 3u);
  EXPECT_EQ(*id_of(ps[0], first_),
            std::to_string(ps[0].stat.pid) + ":" + std::to_string(std::min(first_, dup_)));
  EXPECT_FALSE(id_of(ps[0], 0).has_value()) << "nvidiactl reaches every GPU: no id";
  EXPECT_LT(g.comparisons, 20u);
}

TEST_F(OpenFiles, AProcfsOfOtherProcessesIsNotCompared) {
  std::vector<core::HostProcess> ps{holding(::getpid(), path_, {first_, second_})};
  auto g = group_open_files(ps, false);
  ASSERT_TRUE(g.incomplete);
  EXPECT_EQ(g.comparisons, 0u);
  EXPECT_FALSE(id_of(ps[0], first_).has_value());
}

TEST_F(OpenFiles, AVanishedProcessLeavesItsHoldsWithoutAnId) {
  pid_t gone = child_;
  ::kill(child_, SIGKILL);
  ::waitpid(child_, nullptr, 0);
  child_ = -1;
  std::vector<core::HostProcess> ps{holding(::getpid(), path_, {first_}),
                                    holding(gone, path_, {first_})};
  if (gone < ::getpid()) std::swap(ps[0], ps[1]);
  auto g = group_open_files(ps, true);
  EXPECT_FALSE(g.incomplete) << "a process that exited is normal, not a kcmp failure";
  const auto& self = ps[0].stat.pid == ::getpid() ? ps[0] : ps[1];
  const auto& dead = ps[0].stat.pid == ::getpid() ? ps[1] : ps[0];
  EXPECT_TRUE(id_of(self, first_).has_value());
  EXPECT_FALSE(id_of(dead, first_).has_value());
}

}  // namespace
}  // namespace gpureap::procfs

// The collector names a holder's container from the runtime's state under the runtime root: a
// real process holding a stand-in GPU file, seen through a proc root whose cgroup file says
// docker (every other file of the process is the real one, linked), with docker's state
// beside it. The default runtime root is the folder above the proc root.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "collect/collector.h"

namespace gpureap::collect {
namespace {

namespace fs = std::filesystem;

const std::string kId = "2a759f8fac4d817ff2bc28c224d51c5030f915c0c14997110517984ca9aa8d0f";

class ContainerNaming : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "gpureap-naming-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    fs::create_directories(root_ + "/dev");
    std::ofstream(root_ + "/dev/nvidia0") << "stand-in\n";
    const std::string dev = root_ + "/dev/nvidia0";
    holder_ = ::fork();
    ASSERT_GE(holder_, 0);
    if (holder_ == 0) {
      int fd = ::open(dev.c_str(), O_RDONLY);
      if (fd < 0) ::_exit(1);
      for (;;) ::pause();
    }
    // The child has its file open once its fd shows.
    const std::string fd_dir = "/proc/" + std::to_string(holder_) + "/fd";
    for (int i = 0; i < 500; ++i) {
      bool open = false;
      std::error_code ec;
      for (const auto& e : fs::directory_iterator(fd_dir, ec))
        open |= fs::read_symlink(e.path(), ec).string() == dev;
      if (open) break;
      ::usleep(10'000);
    }
    build_proc_root();
  }
  void TearDown() override {
    if (holder_ > 0) {
      ::kill(holder_, SIGKILL);
      ::waitpid(holder_, nullptr, 0);
    }
    fs::remove_all(root_);
  }

  // <root>/proc: the host's files, but the holder's cgroup is docker's container kId.
  void build_proc_root() {
    const std::string proc = root_ + "/proc";
    fs::create_directories(proc);
    for (const char* f : {"stat", "devices", "sys", "uptime", "meminfo", "loadavg"})
      fs::create_symlink(std::string("/proc/") + f, proc + "/" + f);
    const std::string pid = std::to_string(holder_);
    fs::create_directories(proc + "/" + pid);
    for (const auto& e : fs::directory_iterator("/proc/" + pid)) {
      if (e.path().filename() == "cgroup") continue;
      fs::create_symlink(e.path(), proc + "/" + pid + "/" + e.path().filename().string());
    }
    std::ofstream(proc + "/" + pid + "/cgroup") << "0::/docker/" << kId << "\n";
  }

  void write(const std::string& path, const std::string& text) {
    fs::create_directories(fs::path(root_ + "/" + path).parent_path());
    std::ofstream(root_ + "/" + path) << text;
  }

  const core::ContainerInfo* container_of_holder(const core::ProcView& view) {
    for (const auto& p : view.processes)
      if (p.stat.pid == holder_ && p.details)
        return p.details->container ? &*p.details->container : nullptr;
    return nullptr;
  }

  std::string root_;
  pid_t holder_ = -1;
};

TEST_F(ContainerNaming, AHoldersContainerIsNamedFromTheRuntimeStateBesideTheProcRoot) {
  write("var/lib/docker/containers/" + kId + "/config.v2.json", R"({"Name":"/trainer-7"})");
  auto c = Collector::open({root_ + "/proc", root_ + "/dev", "/sys", "/dev/null"}, nullptr);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->roots().runtime_root, root_);
  auto view = c->scan_processes();
  const auto* container = container_of_holder(view);
  ASSERT_NE(container, nullptr) << "the holder was not found with its container";
  EXPECT_EQ(container->runtime, "docker");
  EXPECT_EQ(container->id, kId);
  EXPECT_EQ(container->name, "trainer-7");
  EXPECT_EQ(container->display_name(), "docker:trainer-7");
  // Only the holder (and its parents) get details; no other process is named.
  for (const auto& p : view.processes) {
    if (p.stat.pid == holder_ || !p.details || !p.details->container) continue;
    EXPECT_NE(p.details->container->name, "trainer-7") << p.stat.pid;
  }
}

TEST_F(ContainerNaming, AnotherRuntimeRootIsReadAndAMissingOneIsAClearError) {
  const std::string other = root_ + "/elsewhere";
  write("elsewhere/var/lib/docker/containers/" + kId + "/config.v2.json", R"({"Name":"/b"})");
  auto c = Collector::open({root_ + "/proc", root_ + "/dev", "/sys", "/dev/null", other}, nullptr);
  ASSERT_TRUE(c) << c.error().message;
  auto view = c->scan_processes();
  const auto* container = container_of_holder(view);
  ASSERT_NE(container, nullptr);
  EXPECT_EQ(container->name, "b");

  // No state there: the process is still found, with its id and no name.
  auto bare = Collector::open({root_ + "/proc", root_ + "/dev", "/sys", "/dev/null"}, nullptr);
  ASSERT_TRUE(bare);
  auto bare_view = bare->scan_processes();
  container = container_of_holder(bare_view);
  ASSERT_NE(container, nullptr);
  EXPECT_EQ(container->id, kId);
  EXPECT_EQ(container->name, std::nullopt);
  EXPECT_EQ(container->display_name(), "docker:2a759f8fac4d");

  auto missing = Collector::open(
      {root_ + "/proc", root_ + "/dev", "/sys", "/dev/null", root_ + "/nope"}, nullptr);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("cannot open runtime root " + root_ + "/nope"),
            std::string::npos)
      << missing.error().message;
  EXPECT_NE(missing.error().hint.find("--runtime-root"), std::string::npos);
}

}  // namespace
}  // namespace gpureap::collect

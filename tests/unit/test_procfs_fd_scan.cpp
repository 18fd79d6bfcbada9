// scan_device_fds (src/procfs/fd_scan.cpp) on the real /proc: the test process (and a forked
// child that inherits its fds) holds stand-in device files from a temporary dev root.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/registry.h"
#include "procfs/device_files.h"
#include "procfs/fd_scan.h"

namespace {

namespace fs = std::filesystem;
using gpureap::core::DeviceHold;
using gpureap::procfs::DeviceCatalog;
using gpureap::procfs::scan_device_fds;

class TempDevRoot {
 public:
  TempDevRoot() {
    std::string tmpl = (fs::temp_directory_path() / "gpureap-fd-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
    for (const char* f : {"nvidia0", "nvidia1", "nvidiactl", "nvidia-foo"})
      std::ofstream(path_ + "/" + f) << "stand-in\n";
  }
  ~TempDevRoot() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDevRoot(const TempDevRoot&) = delete;
  TempDevRoot& operator=(const TempDevRoot&) = delete;
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  explicit Fd(const std::string& path) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    if (fd_ < 0) throw std::runtime_error("cannot open " + path);
  }
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

std::string describe(const std::vector<DeviceHold>& holds) {
  std::string s;
  for (const auto& h : holds) {
    s += h.path + " " + h.kind + " device=" +
         (h.device ? std::to_string(major(*h.device)) + ":" + std::to_string(minor(*h.device))
                   : "-") +
         (h.gpu_file ? " gpu" : "") + " fds=";
    for (size_t i = 0; i < h.fds.size(); ++i) s += (i ? "," : "") + std::to_string(h.fds[i]);
    s += "\n";
  }
  return s;
}

DeviceCatalog catalog(const TempDevRoot& dev) {
  auto cat = DeviceCatalog::enumerate(
      gpureap::backend::device_nodes(gpureap::backend::builtin_backends()), dev.path(), "/proc");
  EXPECT_TRUE(cat.ok()) << cat.error().text();
  return std::move(*cat);
}

TEST(FdScan, ReportsOwnFdsWithPathsAndNumbers) {
  TempDevRoot dev;
  auto cat = catalog(dev);
  ASSERT_EQ(cat.files().size(), 3u);
  Fd proc(::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_GE(proc.get(), 0);

  Fd gpu0a(dev / "nvidia0");
  Fd ctl(dev / "nvidiactl");
  Fd gpu0b(dev / "nvidia0");
  Fd decoy(dev / "nvidia-foo");

  auto scan = scan_device_fds(proc.get(), ::getpid(), cat);
  EXPECT_TRUE(scan.readable);
  EXPECT_FALSE(scan.vanished);
  std::string want = (dev / "nvidia0") +
                     " nvidia device=195:0 gpu fds=" + std::to_string(gpu0a.get()) + "," +
                     std::to_string(gpu0b.get()) + "\n" + (dev / "nvidiactl") +
                     " nvidiactl device=195:255 fds=" + std::to_string(ctl.get()) + "\n";
  EXPECT_EQ(describe(scan.holds), want);
}

TEST(FdScan, AListedScanReadsOnlyItsFdsAndTheWholeTableWhereOneMoved) {
  TempDevRoot dev;
  auto cat = catalog(dev);
  Fd proc(::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  Fd gpu0(dev / "nvidia0");
  Fd ctl(dev / "nvidiactl");
  // Only the listed fds are read: the one not listed is not reported.
  auto listed = gpureap::procfs::scan_listed_fds(proc.get(), ::getpid(), {gpu0.get()}, cat);
  EXPECT_EQ(describe(listed.holds), (dev / "nvidia0") + " nvidia device=195:0 gpu fds=" +
                                        std::to_string(gpu0.get()) + "\n");
  // Nothing listed: nothing read, nothing held.
  EXPECT_TRUE(gpureap::procfs::scan_listed_fds(proc.get(), ::getpid(), {}, cat).holds.empty());
  // A listed fd that holds no GPU file now (closed, or moved to another number since the list
  // was made): the whole table is read, so the moved one is still found.
  Fd moved(::dup(ctl.get()));
  const int was = moved.get();
  auto after_move = gpureap::procfs::scan_listed_fds(proc.get(), ::getpid(), {was + 1000}, cat);
  EXPECT_EQ(describe(after_move.holds),
            (dev / "nvidia0") + " nvidia device=195:0 gpu fds=" + std::to_string(gpu0.get()) +
                "\n" + (dev / "nvidiactl") + " nvidiactl device=195:255 fds=" +
                std::to_string(ctl.get()) + "," + std::to_string(was) + "\n");
  EXPECT_EQ(describe(scan_device_fds(proc.get(), ::getpid(), cat).holds),
            describe(after_move.holds));
}

TEST(FdScan, NothingOpenNothingReported) {
  TempDevRoot dev;
  auto cat = catalog(dev);
  Fd proc(::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  {
    Fd gpu1(dev / "nvidia1");
    EXPECT_EQ(scan_device_fds(proc.get(), ::getpid(), cat).holds.size(), 1u);
  }
  auto scan = scan_device_fds(proc.get(), ::getpid(), cat);
  EXPECT_TRUE(scan.holds.empty()) << describe(scan.holds);
  EXPECT_TRUE(scan.readable);
  EXPECT_FALSE(scan.vanished);
}

TEST(FdScan, DeletedDeviceFileStillMatchesItsCatalogueEntry) {
  TempDevRoot dev;
  auto cat = catalog(dev);
  Fd proc(::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  Fd gpu1(dev / "nvidia1");
  ASSERT_EQ(::unlink((dev / "nvidia1").c_str()), 0);  // link text now ends in " (deleted)"
  auto scan = scan_device_fds(proc.get(), ::getpid(), cat);
  EXPECT_EQ(describe(scan.holds), (dev / "nvidia1") + " nvidia device=195:1 gpu fds=" +
                                      std::to_string(gpu1.get()) + "\n");
}

TEST(FdScan, ForkedChildInheritsTheHolds) {
  TempDevRoot dev;
  auto cat = catalog(dev);
  Fd proc(::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  // Without O_CLOEXEC, as a DataLoader worker would inherit them (no exec here anyway).
  Fd gpu0(::open((dev / "nvidia0").c_str(), O_RDONLY));
  Fd ctl(::open((dev / "nvidiactl").c_str(), O_RDONLY));
  ASSERT_GE(gpu0.get(), 0);
  ASSERT_GE(ctl.get(), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  auto scan = scan_device_fds(proc.get(), child, cat);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_TRUE(scan.readable);
  EXPECT_FALSE(scan.vanished);
  EXPECT_EQ(describe(scan.holds),
            (dev / "nvidia0") + " nvidia device=195:0 gpu fds=" + std::to_string(gpu0.get()) +
                "\n" + (dev / "nvidiactl") +
                " nvidiactl device=195:255 fds=" + std::to_string(ctl.get()) + "\n");
  // Reaped: the fd table is gone with it.
  auto gone = scan_device_fds(proc.get(), child, cat);
  EXPECT_TRUE(gone.vanished);
  EXPECT_TRUE(gone.holds.empty());
}

TEST(FdScan, PidWithoutFdDirectoryIsVanished) {
  TempDevRoot dev;
  auto cat = catalog(dev);
  Fd host(::open((std::string(GPUREAP_FIXTURES) + "/proc/host").c_str(),
                 O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_GE(host.get(), 0);
  auto scan = scan_device_fds(host.get(), 4242, cat);
  EXPECT_TRUE(scan.vanished);
  EXPECT_TRUE(scan.readable);
  EXPECT_TRUE(scan.holds.empty());
}

}  // namespace

// scan_device_fds (src/procfs/fd_scan.cpp) on the real /proc: the test process (and a forked
// child that inherits its fds) holds stand-in device files from a temporary dev root.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/registry.h"
#include "procfs/device_files.h"
#include "procfs/fd_scan.h"
#include "procfs/proc_fs.h"

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

namespace table_task_gone {

int g_commands[2] = {-1, -1};  // in the child: each thread's read end, by index
int g_back = -1;               // in the child: where each thread writes its index and id

void* serve(void* arg) {
  const int index = static_cast<int>(reinterpret_cast<intptr_t>(arg));
  const pid_t ids[2] = {index, static_cast<pid_t>(::syscall(SYS_gettid))};
  char c;
  if (::write(g_back, ids, sizeof ids) != sizeof ids || ::read(g_commands[index], &c, 1) != 1)
    ::_exit(1);
  ::syscall(SYS_exit, 0);  // this thread alone ends
  return nullptr;
}

// Opens `file`, starts two threads, and ends its main thread as pthread_exit() does (the bare
// system call: pthread_exit() would unwind this forked copy of the test program).
[[noreturn]] void run(const std::string& file) {
  if (::open(file.c_str(), O_RDONLY) < 0) ::_exit(1);
  for (intptr_t i = 0; i < 2; ++i) {
    pthread_t t;
    if (::pthread_create(&t, nullptr, serve, reinterpret_cast<void*>(i)) != 0) ::_exit(1);
  }
  ::syscall(SYS_exit, 0);
  ::_exit(1);
}

template <class F>
bool soon(F done) {
  for (int i = 0; i < 6000 && !done(); ++i) ::usleep(10000);
  return done();
}

}  // namespace table_task_gone

// A process whose main thread has exited has its table read through a live thread (the one its
// stat was read through). That thread may end before the table is read while another runs on:
// the process is not gone, and its table is read through the thread that lives.
TEST(FdScan, ATableReadThroughAThreadThatEndedIsReadThroughOneThatLives) {
  TempDevRoot dev;
  auto cat = catalog(dev);
  Fd proc(::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  int commands[2][2], back[2];
  ASSERT_EQ(::pipe(commands[0]), 0);
  ASSERT_EQ(::pipe(commands[1]), 0);
  ASSERT_EQ(::pipe(back), 0);
  pid_t child = ::fork();
  if (child == 0) {
    table_task_gone::g_commands[0] = commands[0][0];
    table_task_gone::g_commands[1] = commands[1][0];
    table_task_gone::g_back = back[1];
    table_task_gone::run(dev / "nvidia0");
  }
  struct Reap {
    pid_t pid;
    ~Reap() {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  } reap{child};
  pid_t tids[2] = {0, 0};
  for (int i = 0; i < 2; ++i) {
    pid_t ids[2];
    ASSERT_EQ(::read(back[0], ids, sizeof ids), static_cast<ssize_t>(sizeof ids));
    ASSERT_TRUE(ids[0] == 0 || ids[0] == 1);
    tids[ids[0]] = ids[1];
  }
  auto procfs = gpureap::procfs::ProcFs::open("/proc");
  ASSERT_TRUE(procfs);
  pid_t task = 0;
  ASSERT_TRUE(table_task_gone::soon([&] {
    auto r = procfs->read_process_stat(child);
    if (r && *r && (*r)->stat.leader_exited) task = (*r)->fd_task;
    return task != 0;
  })) << "its leader never read exited";
  ASSERT_TRUE(task == tids[0] || task == tids[1]) << task;
  // The scan's stat named `task`; it ends before the table is read.
  ASSERT_EQ(::write(commands[task == tids[0] ? 0 : 1][1], "x", 1), 1);
  const std::string entry = "/proc/" + std::to_string(child) + "/task/" + std::to_string(task);
  ASSERT_TRUE(table_task_gone::soon([&] { return ::access(entry.c_str(), F_OK) != 0; }))
      << "the thread did not end";

  auto scan = scan_device_fds(proc.get(), child, cat, {}, task);
  EXPECT_FALSE(scan.vanished) << "a process that runs on in a thread read as gone";
  ASSERT_EQ(scan.holds.size(), 1u) << describe(scan.holds);
  EXPECT_EQ(scan.holds[0].path, dev / "nvidia0");
  for (int fd : {commands[0][0], commands[0][1], commands[1][0], commands[1][1], back[0], back[1]})
    ::close(fd);
}

}  // namespace

// D-state evidence from fixture trees built here: a procfs root with wchan, stack and
// mountinfo, a sysfs root with FUSE connections. What it waits on decides the fix doctor names.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/fuse.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "backend/registry.h"
#include "kernel/blocked_task.h"

namespace gpureap::kernel {
namespace {

namespace fs = std::filesystem;

// The GPU drivers' function prefixes, as the built-in registry names them.
const std::vector<std::string> kNvidiaFunctions =
    backend::kernel_functions(backend::builtin_backends());

class Tree {
 public:
  Tree() {
    root_ = fs::temp_directory_path() /
            ("gpureap-blocked-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    fs::create_directories(root_ / "proc");
    fs::create_directories(root_ / "sys");
  }
  ~Tree() { fs::remove_all(root_); }
  void write(const std::string& rel, const std::string& text) {
    fs::create_directories((root_ / rel).parent_path());
    std::ofstream(root_ / rel) << text;
  }
  std::string proc() const { return (root_ / "proc").string(); }
  std::string sys() const { return (root_ / "sys").string(); }

 private:
  static inline int counter_ = 0;
  fs::path root_;
};

const char* kMounts =
    "22 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw\n"
    "40 22 0:48 / /mnt/remote\\040data rw,nosuid - fuse.sshfs me@host:/data rw,user_id=0\n"
    "41 22 0:52 / /mnt/other rw - fuse.rclone gdrive: rw\n"
    "42 22 0:55 / /home rw,relatime - nfs4 fileserver:/export/home rw,vers=4.2\n"
    "garbage line\n";

TEST(KernelBlockedTask, MountinfoAndStackParse) {
  auto m = parse_mountinfo(kMounts);
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[1].mount_point, "/mnt/remote data");  // \040 decoded
  EXPECT_EQ(m[1].fs_type, "fuse.sshfs");
  EXPECT_EQ(m[1].minor, 48u);
  EXPECT_EQ(m[3].source, "fileserver:/export/home");
  auto st = parse_kernel_stack(
      "[<0>] request_wait_answer+0x12b/0x250 [fuse]\n[<0>] fuse_simple_request+0x18c/0x2e0 "
      "[fuse]\n[<0>] do_syscall_64+0x5c/0x90\n");
  EXPECT_EQ(st, (std::vector<std::string>{"request_wait_answer", "fuse_simple_request",
                                          "do_syscall_64"}));
}

TEST(KernelBlockedTask, WaitsAreToldApart) {
  EXPECT_EQ(classify_wait("fuse_wait_answer", {}, kNvidiaFunctions), core::BlockedOn::Fuse);
  EXPECT_EQ(classify_wait("rpc_wait_bit_killable", {}, kNvidiaFunctions), core::BlockedOn::Nfs);
  EXPECT_EQ(classify_wait(std::nullopt, {"nfs_wait_on_request", "do_syscall_64"}, kNvidiaFunctions),
            core::BlockedOn::Nfs);
  EXPECT_EQ(classify_wait("uvm_va_space_destroy", {}, kNvidiaFunctions),
            core::BlockedOn::GpuDriver);
  EXPECT_EQ(classify_wait("io_schedule", {"_nv012345rm", "nvidia_ioctl"}, kNvidiaFunctions),
            core::BlockedOn::GpuDriver);
  // Plain disk I/O, or nothing known: no guess.
  EXPECT_EQ(classify_wait("io_schedule", {"blk_mq_get_tag", "nvme_queue_rq"}, kNvidiaFunctions),
            core::BlockedOn::Unknown);
  EXPECT_EQ(classify_wait(std::nullopt, {}, kNvidiaFunctions), core::BlockedOn::Unknown);
}

TEST(KernelBlockedTask, FuseWaitNamesTheConnectionAndItsWaitingCount) {
  Tree t;
  t.write("proc/700/wchan", "request_wait_answer");
  t.write("proc/700/stack", "[<0>] request_wait_answer+0x12b/0x250 [fuse]\n");
  t.write("proc/700/mountinfo", kMounts);
  t.write("sys/fs/fuse/connections/48/waiting", "3\n");
  t.write("sys/fs/fuse/connections/52/waiting", "0\n");
  auto b = read_blocked_task(t.proc(), t.sys(), 700, kNvidiaFunctions);
  EXPECT_EQ(b.on, core::BlockedOn::Fuse);
  EXPECT_EQ(b.wchan, "request_wait_answer");
  EXPECT_FALSE(b.stack_problem);
  ASSERT_EQ(b.fuse.size(), 2u);
  EXPECT_EQ(b.fuse[0].id, 48u);
  EXPECT_EQ(b.fuse[0].mount_point, "/mnt/remote data");
  EXPECT_EQ(b.fuse[0].waiting, 3u);
  EXPECT_EQ(b.fuse[1].waiting, 0u);
  EXPECT_TRUE(b.nfs.empty());  // the NFS mount is not what it waits on
}

TEST(KernelBlockedTask, NfsWaitNamesTheServerAndAnUnreadableStackIsSaid) {
  Tree t;
  t.write("proc/701/wchan", "rpc_wait_bit_killable");
  t.write("proc/701/mountinfo", kMounts);  // no stack file: this kernel does not show it
  auto b = read_blocked_task(t.proc(), t.sys(), 701, kNvidiaFunctions);
  EXPECT_EQ(b.on, core::BlockedOn::Nfs);
  ASSERT_EQ(b.nfs.size(), 1u);
  EXPECT_EQ(b.nfs[0].server, "fileserver");
  EXPECT_EQ(b.nfs[0].mount_point, "/home");
  ASSERT_TRUE(b.stack_problem);
  EXPECT_TRUE(b.fuse.empty());
}

TEST(KernelBlockedTask, AProcessWithNothingToReadGivesNoGuess) {
  Tree t;
  auto b = read_blocked_task(t.proc(), t.sys(), 999, kNvidiaFunctions);
  EXPECT_EQ(b.on, core::BlockedOn::Unknown);
  EXPECT_FALSE(b.wchan);
  EXPECT_TRUE(b.stack.empty());
  EXPECT_TRUE(b.fuse.empty());
}

TEST(KernelBlockedTask, OurOwnStackIsReadableOnlyAsRoot) {
  auto b = read_blocked_task("/proc", "/sys", ::getpid(), kNvidiaFunctions);
  if (::geteuid() == 0 && b.stack_problem)
    GTEST_SKIP() << *b.stack_problem;  // a kernel without stacks, or a sandbox
  if (::geteuid() != 0) {
    ASSERT_TRUE(b.stack_problem);
    EXPECT_NE(b.stack_problem->find("root"), std::string::npos);
  }
  EXPECT_EQ(b.on, core::BlockedOn::Unknown);  // running, not in D
}

// A real D-state process: a FUSE mount whose daemon (this test) never answers, and a child
// that looks a name up in it. Only where the sandbox lets root mount FUSE and fusectl.
TEST(KernelBlockedTask, ARealProcessStuckOnAFuseMountThatNeverAnswers) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting FUSE needs root";
  Tree t;
  const std::string mnt = t.proc() + "/../mnt";
  const std::string ctl = t.sys() + "/fs/fuse/connections";
  fs::create_directories(mnt);
  fs::create_directories(ctl);
  int fuse = ::open("/dev/fuse", O_RDWR | O_CLOEXEC);
  if (fuse < 0) GTEST_SKIP() << "no /dev/fuse here";
  std::string opts = "fd=" + std::to_string(fuse) + ",rootmode=40000,user_id=0,group_id=0";
  if (::mount("gpureap-test", mnt.c_str(), "fuse.gpureap-test", MS_NOSUID | MS_NODEV,
              opts.c_str()) != 0) {
    ::close(fuse);
    GTEST_SKIP() << "the sandbox refuses a FUSE mount";
  }
  // Whatever fails below, nothing stays mounted (Tree's removal would walk into the mount).
  struct Unmount {
    std::string path;
    int* fd;
    ~Unmount() {
      ::umount2(path.c_str(), MNT_DETACH);
      if (fd && *fd >= 0) ::close(*fd);
    }
  } fuse_guard{mnt, &fuse};
  // FUSE_INIT is the one request answered.
  std::vector<char> buf(1 << 17);
  ssize_t n = ::read(fuse, buf.data(), buf.size());
  ASSERT_GT(n, static_cast<ssize_t>(sizeof(fuse_in_header)));
  auto* in = reinterpret_cast<fuse_in_header*>(buf.data());
  ASSERT_EQ(in->opcode, FUSE_INIT);
  struct {
    fuse_out_header h;
    fuse_init_out init;
  } reply{};
  reply.h.len = sizeof(reply);
  reply.h.unique = in->unique;
  reply.init.major = FUSE_KERNEL_VERSION;
  reply.init.minor = 26;
  reply.init.max_write = 4096;
  ASSERT_EQ(::write(fuse, &reply, sizeof(reply)), static_cast<ssize_t>(sizeof(reply)));
  bool ctl_mounted = ::mount("fusectl", ctl.c_str(), "fusectl", 0, nullptr) == 0;
  Unmount ctl_guard{ctl_mounted ? ctl : std::string(), nullptr};
  pid_t child = ::fork();
  if (child == 0) {
    ::close(fuse);  // the daemon's end is the test's alone: closing it there ends the connection
    // FUSE waits interruptibly first; once a signal it handles interrupts the wait, it waits
    // for the daemon's answer to that interrupt uninterruptibly (only SIGKILL ends it): D.
    struct sigaction sa {};
    sa.sa_handler = [](int) {};
    ::sigaction(SIGUSR1, &sa, nullptr);
    struct stat st {};
    ::stat((mnt + "/anything").c_str(), &st);  // a LOOKUP nobody answers
    ::_exit(0);
  }
  auto state_of = [&] {
    std::ifstream stat("/proc/" + std::to_string(child) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), {});
    auto close = text.rfind(')');
    return close != std::string::npos && close + 2 < text.size() ? text[close + 2] : '?';
  };
  auto waits_on_fuse = [&] {
    std::ifstream w("/proc/" + std::to_string(child) + "/wchan");
    std::string text((std::istreambuf_iterator<char>(w)), {});
    return text.find("wait_answer") != std::string::npos || text.find("fuse") != std::string::npos;
  };
  // Bounded waits for each step; no timing is asserted.
  for (int i = 0; i < 6000 && !waits_on_fuse(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ::kill(child, SIGUSR1);
  char state = '?';
  for (int i = 0; i < 6000 && (state = state_of()) != 'D'; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  auto b = read_blocked_task("/proc", t.sys(), child, kNvidiaFunctions);
  // Let the child go: abort the connection if fusectl is there, else unmount lazily.
  std::optional<unsigned> id;
  for (const auto& c : b.fuse)
    if (c.mount_point.find("mnt") != std::string::npos) id = c.id;
  if (ctl_mounted && id) std::ofstream(ctl + "/" + std::to_string(*id) + "/abort") << "1";
  ::umount2(mnt.c_str(), MNT_DETACH);
  ::close(fuse);
  fuse = -1;
  int status = 0;
  ::waitpid(child, &status, 0);
  if (state != 'D')
    GTEST_SKIP() << "this kernel did not put the lookup in D (state " << state << ")";
  EXPECT_EQ(b.on, core::BlockedOn::Fuse) << b.wchan.value_or("(no wchan)");
  ASSERT_TRUE(id.has_value()) << "its FUSE mount is not in its mountinfo";
  if (ctl_mounted) {
    const core::FuseConnection* c = nullptr;
    for (const auto& f : b.fuse)
      if (f.id == *id) c = &f;
    ASSERT_NE(c, nullptr);
    EXPECT_GE(c->waiting.value_or(0), 1u);  // the lookup it waits for
  }
}

}  // namespace
}  // namespace gpureap::kernel

// D-state evidence from fixture trees built here: a procfs root with wchan, stack and
// mountinfo, a sysfs root with FUSE connections. What it waits on decides the fix doctor names.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "kernel/blocked_task.h"

namespace gpureap::kernel {
namespace {

namespace fs = std::filesystem;

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
  EXPECT_EQ(classify_wait("fuse_wait_answer", {}), core::BlockedOn::Fuse);
  EXPECT_EQ(classify_wait("rpc_wait_bit_killable", {}), core::BlockedOn::Nfs);
  EXPECT_EQ(classify_wait(std::nullopt, {"nfs_wait_on_request", "do_syscall_64"}),
            core::BlockedOn::Nfs);
  EXPECT_EQ(classify_wait("uvm_va_space_destroy", {}), core::BlockedOn::GpuDriver);
  EXPECT_EQ(classify_wait("io_schedule", {"_nv012345rm", "nvidia_ioctl"}),
            core::BlockedOn::GpuDriver);
  // Plain disk I/O, or nothing known: no guess.
  EXPECT_EQ(classify_wait("io_schedule", {"blk_mq_get_tag", "nvme_queue_rq"}),
            core::BlockedOn::Unknown);
  EXPECT_EQ(classify_wait(std::nullopt, {}), core::BlockedOn::Unknown);
}

TEST(KernelBlockedTask, FuseWaitNamesTheConnectionAndItsWaitingCount) {
  Tree t;
  t.write("proc/700/wchan", "request_wait_answer");
  t.write("proc/700/stack", "[<0>] request_wait_answer+0x12b/0x250 [fuse]\n");
  t.write("proc/700/mountinfo", kMounts);
  t.write("sys/fs/fuse/connections/48/waiting", "3\n");
  t.write("sys/fs/fuse/connections/52/waiting", "0\n");
  auto b = read_blocked_task(t.proc(), t.sys(), 700);
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
  auto b = read_blocked_task(t.proc(), t.sys(), 701);
  EXPECT_EQ(b.on, core::BlockedOn::Nfs);
  ASSERT_EQ(b.nfs.size(), 1u);
  EXPECT_EQ(b.nfs[0].server, "fileserver");
  EXPECT_EQ(b.nfs[0].mount_point, "/home");
  ASSERT_TRUE(b.stack_problem);
  EXPECT_TRUE(b.fuse.empty());
}

TEST(KernelBlockedTask, AProcessWithNothingToReadGivesNoGuess) {
  Tree t;
  auto b = read_blocked_task(t.proc(), t.sys(), 999);
  EXPECT_EQ(b.on, core::BlockedOn::Unknown);
  EXPECT_FALSE(b.wchan);
  EXPECT_TRUE(b.stack.empty());
  EXPECT_TRUE(b.fuse.empty());
}

TEST(KernelBlockedTask, OurOwnStackIsReadableOnlyAsRoot) {
  auto b = read_blocked_task("/proc", "/sys", ::getpid());
  if (::geteuid() == 0 && b.stack_problem)
    GTEST_SKIP() << *b.stack_problem;  // a kernel without stacks, or a sandbox
  if (::geteuid() != 0) {
    ASSERT_TRUE(b.stack_problem);
    EXPECT_NE(b.stack_problem->find("root"), std::string::npos);
  }
  EXPECT_EQ(b.on, core::BlockedOn::Unknown);  // running, not in D
}

}  // namespace
}  // namespace gpureap::kernel

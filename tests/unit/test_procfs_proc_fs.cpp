// ProcFs (src/procfs/proc_fs.cpp) over the fixture trees, and over the real /proc with real
// processes (a zombie, a stopped child) made by the test.
#include <errno.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "procfs/file_read.h"
#include "procfs/proc_fs.h"

namespace {

using gpureap::procfs::ProcFs;

std::string root(const std::string& name) {
  return std::string(GPUREAP_FIXTURES) + "/proc/" + name;
}

ProcFs open_fixture(const std::string& name) {
  auto p = ProcFs::open(root(name));
  EXPECT_TRUE(p.ok()) << p.error().text();
  return std::move(*p);
}

std::vector<pid_t> sorted(std::vector<pid_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(ProcFsOpen, MissingRootIsAnErrorNamingThePath) {
  const std::string missing = root("no-such-case");
  auto p = ProcFs::open(missing);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message.find(missing), std::string::npos) << p.error().message;
  EXPECT_NE(p.error().message.find("No such file or directory"), std::string::npos)
      << p.error().message;
  EXPECT_FALSE(p.error().hint.empty());
}

TEST(ProcFsOpen, RootThatIsAFileIsAnError) {
  auto p = ProcFs::open(root("host/stat"));
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message.find(root("host/stat")), std::string::npos);
}

TEST(ProcFsOpen, KeepsTheRoot) {
  auto p = open_fixture("host");
  EXPECT_EQ(p.root(), root("host"));
  EXPECT_GE(p.dirfd(), 0);
}

TEST(ProcFsListPids, OnlyNumericEntries) {
  auto p = open_fixture("host");
  const std::vector<pid_t> want{1, 2, 4242, 4250, 4300, 5120, 6001, 7000, 7001, 7002};
  EXPECT_EQ(sorted(*p.list_pids()), want);
  // The directory fd is shared; a second listing starts from the beginning again.
  EXPECT_EQ(sorted(*p.list_pids()), want);
  // Copies share the fd and list the same.
  ProcFs copy = p;
  EXPECT_EQ(sorted(*copy.list_pids()), want);
}

TEST(ProcFsListPids, OtherTrees) {
  EXPECT_EQ(sorted(*open_fixture("garbage-stat").list_pids()),
            (std::vector<pid_t>{201, 202, 203, 204, 205}));
  EXPECT_EQ(sorted(*open_fixture("hostile-comm").list_pids()),
            (std::vector<pid_t>{101, 102, 103, 104, 105, 106, 107, 108}));
  EXPECT_EQ(*open_fixture("child-pidns").list_pids(), (std::vector<pid_t>{1}));
}

// ---- read_stat: ok, vanished, garbage ----

TEST(ProcFsReadStat, Ok) {
  auto p = open_fixture("host");
  auto st = p.read_stat(4242);
  ASSERT_TRUE(st.ok()) << st.error().message;
  ASSERT_TRUE(st->has_value());
  const auto& s = **st;
  EXPECT_EQ(s.pid, 4242);
  EXPECT_EQ(s.comm, "python3");
  EXPECT_EQ(s.state, 'R');
  EXPECT_EQ(s.ppid, 1);
  EXPECT_EQ(s.start_ticks, 987654u);
  EXPECT_EQ(s.num_threads, 48);
}

TEST(ProcFsReadStat, KernelThreadAndZombie) {
  auto p = open_fixture("host");
  auto k = p.read_stat(2);
  ASSERT_TRUE(k.ok() && k->has_value());
  EXPECT_TRUE((*k)->is_kernel_thread());
  EXPECT_EQ((*k)->comm, "kthreadd");
  auto z = p.read_stat(4300);
  ASSERT_TRUE(z.ok() && z->has_value());
  EXPECT_TRUE((*z)->is_zombie());
  EXPECT_FALSE((*z)->is_kernel_thread());
}

TEST(ProcFsReadStat, MissingStatOrPidIsVanishedNotAnError) {
  auto p = open_fixture("host");
  auto no_stat = p.read_stat(7001);  // directory without stat
  ASSERT_TRUE(no_stat.ok()) << no_stat.error().message;
  EXPECT_FALSE(no_stat->has_value());
  auto no_dir = p.read_stat(99999);
  ASSERT_TRUE(no_dir.ok()) << no_dir.error().message;
  EXPECT_FALSE(no_dir->has_value());
  // Only stat is enough for read_stat.
  auto only_stat = p.read_stat(7000);
  ASSERT_TRUE(only_stat.ok() && only_stat->has_value());
  EXPECT_EQ((*only_stat)->comm, "sleep");
}

TEST(ProcFsReadStat, GarbageIsAnErrorNamingThePid) {
  auto p = open_fixture("garbage-stat");
  for (pid_t pid : {201, 202, 203, 205}) {
    SCOPED_TRACE(pid);
    auto st = p.read_stat(pid);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().message.rfind(
                  "process " + std::to_string(pid) + ": malformed /proc/PID/stat", 0),
              0u)
        << st.error().message;
  }
}

// The kernel never returns an empty stat for a live or a vanished process: a vanished one
// fails the read with ESRCH (proc_single_show), which read_stat already reports as gone.
TEST(ProcFsReadStat, EmptyStatIsGarbageNotVanished) {
  auto p = open_fixture("garbage-stat");
  auto st = p.read_stat(204);
  EXPECT_FALSE(st.ok()) << "an empty stat file was reported as a vanished process";
}

TEST(ProcFsReadStat, HostileComms) {
  auto p = open_fixture("hostile-comm");
  auto a = p.read_stat(102);
  ASSERT_TRUE(a.ok() && a->has_value());
  EXPECT_EQ((*a)->comm, "evil) R 1 1");
  EXPECT_EQ((*a)->state, 'S');
  EXPECT_EQ((*a)->ppid, 77);
  auto b = p.read_stat(104);
  ASSERT_TRUE(b.ok() && b->has_value());
  EXPECT_EQ((*b)->comm, "two\nlines");
  auto c = p.read_stat(106);
  ASSERT_TRUE(c.ok() && c->has_value());
  EXPECT_EQ((*c)->comm,
            "\xff\xfe"
            "bad\xc0\x80");
}

// ---- read_details ----

TEST(ProcFsReadDetails, UnknownUidFallsBackToTheNumber) {
  auto p = open_fixture("host");
  auto r = p.read_details(4242, false);
  ASSERT_TRUE(r.details.has_value());
  EXPECT_TRUE(r.complete);
  const auto& d = *r.details;
  EXPECT_EQ(d.uid, 54321u);
  EXPECT_EQ(d.euid, 54321u);
  EXPECT_EQ(d.user, "54321");
  EXPECT_EQ(d.cmdline,
            (std::vector<std::string>{"python3", "train.py", "--run-name", "my run", "--tag", ""}));
  EXPECT_EQ(d.ns_pids, (std::vector<pid_t>{4242}));
  EXPECT_EQ(d.container, std::nullopt);
  EXPECT_EQ(d.wchan, std::nullopt);
}

TEST(ProcFsReadDetails, KnownUidGetsItsName) {
  auto p = open_fixture("host");
  auto r = p.read_details(5120, false);
  ASSERT_TRUE(r.details.has_value());
  EXPECT_EQ(r.details->uid, 0u);
  EXPECT_EQ(r.details->user, "root");
  EXPECT_EQ(r.details->cmdline, (std::vector<std::string>{"python", "serve.py"}));
  EXPECT_EQ(r.details->ns_pids, (std::vector<pid_t>{5120, 1}));
  ASSERT_TRUE(r.details->container.has_value());
  EXPECT_EQ(r.details->container->runtime, "docker");
  EXPECT_EQ(r.details->container->id,
            "0d12b056f1b6871a1cf3b3246019d3a3c9103667da65e7ec2612005a36efce97");
  EXPECT_EQ(r.details->container->pod_uid, std::nullopt);
}

TEST(ProcFsReadDetails, NestedNamespacesAndPod) {
  auto p = open_fixture("host");
  auto r = p.read_details(6001, false);
  ASSERT_TRUE(r.details.has_value());
  EXPECT_EQ(r.details->ns_pids, (std::vector<pid_t>{6001, 45, 7}));
  EXPECT_EQ(r.details->cmdline,
            (std::vector<std::string>{"/usr/bin/python3", "/usr/local/bin/torchrun",
                                      "--nproc-per-node=2", "eval.py"}));
  ASSERT_TRUE(r.details->container.has_value());
  EXPECT_EQ(r.details->container->runtime, "containerd");
  EXPECT_EQ(r.details->container->id,
            "d8c2070edf95695818b24d99ee215240e3100117221daa0797f1260086d55189");
  EXPECT_EQ(r.details->container->pod_uid, "3f9d2a1c-6b7e-4c5d-8e9f-0a1b2c3d4e5f");
}

TEST(ProcFsReadDetails, WchanOnlyWhenAsked) {
  auto p = open_fixture("host");
  auto without = p.read_details(4250, false);
  ASSERT_TRUE(without.details.has_value());
  EXPECT_EQ(without.details->wchan, std::nullopt);
  auto with = p.read_details(4250, true);
  ASSERT_TRUE(with.details.has_value());
  EXPECT_EQ(with.details->wchan, "rpc_wait_bit_killable");
  EXPECT_EQ(with.details->ns_pids, (std::vector<pid_t>{4250, 17}));
  // "0" means not waiting anywhere.
  auto running = p.read_details(4242, true);
  ASSERT_TRUE(running.details.has_value());
  EXPECT_EQ(running.details->wchan, std::nullopt);
}

TEST(ProcFsReadDetails, KernelThreadAndZombieHaveNoCmdline) {
  auto p = open_fixture("host");
  auto k = p.read_details(2, true);
  ASSERT_TRUE(k.details.has_value());
  EXPECT_TRUE(k.details->cmdline.empty());
  EXPECT_EQ(k.details->user, "root");
  EXPECT_EQ(k.details->wchan, "kthreadd");
  EXPECT_EQ(k.details->container, std::nullopt);
  auto z = p.read_details(4300, true);
  ASSERT_TRUE(z.details.has_value());
  EXPECT_TRUE(z.details->cmdline.empty());
  EXPECT_EQ(z.details->wchan, std::nullopt);
  EXPECT_EQ(z.details->uid, 54321u);
}

TEST(ProcFsReadDetails, MissingStatusMeansVanished) {
  auto p = open_fixture("host");
  EXPECT_FALSE(p.read_details(7000, true).details.has_value());   // only stat
  EXPECT_FALSE(p.read_details(7001, true).details.has_value());   // no stat, no status
  EXPECT_FALSE(p.read_details(99999, true).details.has_value());  // no directory
}

TEST(ProcFsReadDetails, StatusWithoutTheOtherFiles) {
  auto p = open_fixture("host");
  auto r = p.read_details(7002, true);
  ASSERT_TRUE(r.details.has_value());
  EXPECT_TRUE(r.complete);  // missing is not "not permitted"
  EXPECT_EQ(r.details->uid, 0u);
  EXPECT_TRUE(r.details->cmdline.empty());
  EXPECT_EQ(r.details->container, std::nullopt);
  EXPECT_EQ(r.details->wchan, std::nullopt);
  EXPECT_EQ(r.details->ns_pids, (std::vector<pid_t>{7002}));
}

// ---- whole-root files ----

TEST(ProcFsRootFiles, BootTime) {
  EXPECT_EQ(open_fixture("host").boot_time(), 1700000000);
  EXPECT_EQ(open_fixture("child-pidns").boot_time(), std::nullopt);
}

TEST(ProcFsRootFiles, PidMax) {
  EXPECT_EQ(open_fixture("host").pid_max(), 32768u);
  EXPECT_EQ(open_fixture("child-pidns").pid_max(), 4194304u);  // missing: PID_MAX_LIMIT
}

TEST(ProcFsRootFiles, PidNamespace) {
  EXPECT_EQ(open_fixture("host").in_child_pid_namespace(), false);
  EXPECT_EQ(open_fixture("child-pidns").in_child_pid_namespace(), true);
  EXPECT_EQ(open_fixture("garbage-stat").in_child_pid_namespace(), std::nullopt);
  EXPECT_EQ(open_fixture("host").pid_namespace(), 4026531836u);
  EXPECT_EQ(open_fixture("child-pidns").pid_namespace(), 4026532198u);
  EXPECT_EQ(open_fixture("garbage-stat").pid_namespace(), std::nullopt);
}

// ---- the real /proc ----

ProcFs real_proc() {
  auto p = ProcFs::open("/proc");
  EXPECT_TRUE(p.ok());
  return std::move(*p);
}

TEST(ProcFsReal, OwnProcess) {
  auto p = real_proc();
  auto st = p.read_stat(::getpid());
  ASSERT_TRUE(st.ok() && st->has_value());
  char comm[17] = {};
  ASSERT_EQ(::prctl(PR_GET_NAME, comm), 0);
  EXPECT_EQ((*st)->pid, ::getpid());
  EXPECT_EQ((*st)->comm, comm);
  EXPECT_EQ((*st)->state, 'R');
  EXPECT_EQ((*st)->ppid, ::getppid());
  EXPECT_EQ((*st)->pgid, ::getpgrp());
  EXPECT_EQ((*st)->sid, ::getsid(0));
  EXPECT_FALSE((*st)->is_kernel_thread());

  auto r = p.read_details(::getpid(), true);
  ASSERT_TRUE(r.details.has_value());
  EXPECT_EQ(r.details->uid, ::getuid());
  EXPECT_EQ(r.details->euid, ::geteuid());
  ASSERT_FALSE(r.details->cmdline.empty());
  EXPECT_EQ(r.details->cmdline[0], program_invocation_name);  // argv[0]
  ASSERT_FALSE(r.details->ns_pids.empty());
  EXPECT_EQ(r.details->ns_pids.back(), ::getpid());  // innermost: our own namespace

  auto pids = *p.list_pids();
  EXPECT_NE(std::find(pids.begin(), pids.end(), ::getpid()), pids.end());
}

TEST(ProcFsReal, ZombieThenVanished) {
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  // Wait for the exit without reaping: the child is a zombie now.
  siginfo_t info{};
  ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOWAIT), 0);
  auto p = real_proc();
  auto z = p.read_stat(child);
  ASSERT_TRUE(z.ok() && z->has_value());
  EXPECT_EQ((*z)->state, 'Z');
  EXPECT_TRUE((*z)->is_zombie());
  EXPECT_EQ((*z)->ppid, ::getpid());
  auto d = p.read_details(child, true);
  ASSERT_TRUE(d.details.has_value());
  EXPECT_TRUE(d.details->cmdline.empty());

  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
  auto gone = p.read_stat(child);
  ASSERT_TRUE(gone.ok()) << gone.error().message;
  EXPECT_FALSE(gone->has_value());
  EXPECT_FALSE(p.read_details(child, true).details.has_value());
}

// A child killed by SIGKILL and not reaped: its stat says how it ended, and its owner (all a
// zombie keeps of its details) is read from its status in one read.
TEST(ProcFsReal, AZombiesWaitStatusAndOwner) {
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  siginfo_t info{};
  ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOWAIT), 0);
  auto p = real_proc();
  auto z = p.read_stat(child);
  ASSERT_TRUE(z.ok() && z->has_value());
  EXPECT_TRUE((*z)->is_zombie());
  EXPECT_EQ((*z)->wait_status, SIGKILL);
  auto owner = p.read_owner(child);
  ASSERT_TRUE(owner.details.has_value());
  EXPECT_TRUE(owner.complete);
  EXPECT_EQ(owner.details->uid, ::getuid());
  EXPECT_EQ(owner.details->euid, ::geteuid());
  EXPECT_TRUE(owner.details->cmdline.empty());
  auto self = p.read_stat(::getpid());
  ASSERT_TRUE(self.ok() && self->has_value());
  EXPECT_EQ((*self)->wait_status, std::nullopt);  // a live process has none

  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
  EXPECT_FALSE(p.read_owner(child).details.has_value());  // gone
}

TEST(ProcFsReal, StoppedChild) {
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  ASSERT_EQ(::kill(child, SIGSTOP), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, WUNTRACED), child);
  ASSERT_TRUE(WIFSTOPPED(status));
  auto st = real_proc().read_stat(child);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  ASSERT_TRUE(st.ok() && st->has_value());
  EXPECT_EQ((*st)->state, 'T');
  EXPECT_TRUE((*st)->is_stopped());
  EXPECT_EQ((*st)->ppid, ::getpid());
}

}  // namespace

namespace {

// A procfs tree a hostile user could plant: a FIFO for a stat, a command line that reads like
// /dev/zero, a status that is a directory. Nothing blocks, nothing allocates without bound.
TEST(ProcFsHostileTree, FifosDevicesAndDirectoriesAreNotRead) {
  char tmpl[] = "/tmp/gpureap-hostile-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  std::string dir = tmpl;
  ::mkdir((dir + "/100").c_str(), 0755);
  ::mkdir((dir + "/200").c_str(), 0755);
  ASSERT_EQ(::mkfifo((dir + "/100/stat").c_str(), 0600), 0);
  {
    FILE* f = std::fopen((dir + "/200/stat").c_str(), "w");
    std::fputs("200 (ok) S 1 200 200 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 100 0 0\n", f);
    std::fclose(f);
  }
  ASSERT_EQ(::symlink("/dev/zero", (dir + "/200/cmdline").c_str()), 0);
  ::mkdir((dir + "/200/status").c_str(), 0755);
  auto p = ProcFs::open(dir);
  ASSERT_TRUE(p.ok());
  auto fifo = p->read_stat(100);
  ASSERT_FALSE(fifo.ok());
  EXPECT_NE(fifo.error().message.find("not a regular file"), std::string::npos)
      << fifo.error().message;
  auto ok = p->read_stat(200);
  ASSERT_TRUE(ok.ok() && *ok);
  auto d = p->read_details(200, false);
  ASSERT_TRUE(d.details);
  EXPECT_TRUE(d.details->cmdline.empty());
  std::system(("rm -rf " + dir).c_str());
}

TEST(ProcFsHostileTree, AHugeFileIsReadOnlyUpToTheLimit) {
  char tmpl[] = "/tmp/gpureap-huge-XXXXXX";
  int fd = ::mkstemp(tmpl);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, 64 << 20), 0);
  ::close(fd);
  auto r = gpureap::procfs::read_file(tmpl, 1 << 20);
  EXPECT_TRUE(r.ok());
  EXPECT_TRUE(r.truncated);
  EXPECT_EQ(r.data.size(), 1u << 20);
  ::unlink(tmpl);
}

}  // namespace

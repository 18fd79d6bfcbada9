// gpureap out of file descriptors while it reads /proc and /dev (procfs/resource_shortage.h):
// each reader says it failed, with the errno, instead of reading as an empty directory or a
// vanished process, and the collector's scan says so in scan_failures. Each case runs in a
// forked child whose limit of open files leaves it no fd free.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>

#include "backend/registry.h"
#include "collect/collector.h"
#include "no_free_fd.h"
#include "procfs/device_files.h"
#include "procfs/fd_scan.h"
#include "procfs/proc_fs.h"
#include "procfs/resource_shortage.h"
#include "procfs/thread_tables.h"
#include "skip_sanitized.h"

namespace {

namespace fs = std::filesystem;
using gpureap::procfs::DeviceCatalog;
using gpureap::procfs::ProcFs;
using gpureap::testing::with_no_free_fd;

std::string errno_name(int err) {
  return err == EMFILE ? "EMFILE" : std::to_string(err);
}

class StandInDev {
 public:
  StandInDev() {
    std::string tmpl = (fs::temp_directory_path() / "gpureap-short-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
    std::ofstream(path_ + "/nvidia0") << "stand-in\n";
  }
  ~StandInDev() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

gpureap::procfs::DeviceNodes nodes() {
  return gpureap::backend::device_nodes(gpureap::backend::builtin_backends());
}

TEST(ResourceShortage, TheProcessListIsAnErrorNotEmpty) {
  std::optional<ProcFs> proc;
  auto answer = with_no_free_fd([&] { proc.emplace(*ProcFs::open("/proc")); },
                                [&] {
                                  auto pids = proc->list_pids();
                                  if (pids) return std::string("listed");
                                  return errno_name(pids.error().code) + " " + pids.error().text();
                                });
  EXPECT_EQ(answer.rfind("EMFILE ", 0), 0u) << answer;
  EXPECT_NE(answer.find("ulimit -n"), std::string::npos) << answer;
}

TEST(ResourceShortage, AStatThatCannotBeOpenedIsNoVanishedProcess) {
  std::optional<ProcFs> proc;
  auto answer = with_no_free_fd([&] { proc.emplace(*ProcFs::open("/proc")); },
                                [&] {
                                  auto st = proc->read_process_stat(::getpid());
                                  if (st && !*st) return std::string("vanished");
                                  if (st) return std::string("read");
                                  return errno_name(st.error().code);
                                });
  EXPECT_EQ(answer, "EMFILE");
}

void* wait_forever(void*) {
  for (;;) ::pause();
}

// A process whose main thread has exited runs on in its other threads: the leader's stat says
// 'Z'. Out of file descriptors while its task list is read, it is no zombie that holds nothing
// (a GPU file its threads hold would be left out of a view that says it is complete).
TEST(ResourceShortage, ALeaderThatExitedIsNoZombieWhenItsThreadsCannotBeRead) {
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t runs_on = ::fork();
  ASSERT_GE(runs_on, 0);
  if (runs_on == 0) {
    pthread_t t;
    if (::pthread_create(&t, nullptr, wait_forever, nullptr) != 0) ::_exit(96);
    ::close(ready[1]);
    ::syscall(SYS_exit, 0);  // the main thread alone, without pthread_exit's unwinding
  }
  ::close(ready[1]);
  char c;
  (void)::read(ready[0], &c, 1);  // EOF once the child has started its thread
  ::close(ready[0]);
  for (int i = 0; i < 60000; ++i) {  // until the main thread has exited: its stat says 'Z'
    std::ifstream in("/proc/" + std::to_string(runs_on) + "/stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto paren = stat.rfind(')');
    if (paren != std::string::npos && stat.compare(paren, 3, ") Z") == 0) break;
    ::usleep(1000);
  }
  std::optional<ProcFs> proc;
  int spare = -1;
  // One fd free: the leader's stat can be read, its task list and a thread's stat not both.
  auto answer = with_no_free_fd(
      [&] {
        proc.emplace(*ProcFs::open("/proc"));
        spare = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
      },
      [&] {
        ::close(spare);
        auto st = proc->read_process_stat(runs_on);
        if (!st) return errno_name(st.error().code);
        if (!*st) return std::string("vanished");
        if ((*st)->stat.is_zombie()) return std::string("a zombie holding nothing");
        return "read its live thread " + std::to_string((*st)->fd_task);
      });
  ::kill(runs_on, SIGKILL);
  ::waitpid(runs_on, nullptr, 0);
  EXPECT_EQ(answer, "EMFILE");
}

TEST(ResourceShortage, AnFdTableThatCannotBeOpenedIsNoVanishedProcess) {
  StandInDev dev;
  auto cat = DeviceCatalog::enumerate(nodes(), dev.path(), "/proc");
  ASSERT_TRUE(cat.ok()) << cat.error().text();
  std::optional<ProcFs> proc;
  auto answer = with_no_free_fd(
      [&] { proc.emplace(*ProcFs::open("/proc")); },
      [&] {
        auto scan = gpureap::procfs::scan_device_fds(proc->dirfd(), ::getpid(), *cat);
        return std::string(scan.vanished ? "vanished " : "") + errno_name(scan.failed);
      });
  EXPECT_EQ(answer, "EMFILE");
}

TEST(ResourceShortage, ThreadTablesThatCannotBeComparedSaySo) {
  std::optional<ProcFs> proc;
  auto answer = with_no_free_fd([&] { proc.emplace(*ProcFs::open("/proc")); },
                                [&] {
                                  auto t = gpureap::procfs::threads_with_own_tables(
                                      proc->dirfd(), ::getpid(), ::getpid());
                                  return errno_name(t.failed);
                                });
  EXPECT_EQ(answer, "EMFILE");
}

TEST(ResourceShortage, ADevRootThatCannotBeListedFailsTheCatalogue) {
  StandInDev dev;
  auto answer = with_no_free_fd([] {},
                                [&] {
                                  auto cat = DeviceCatalog::enumerate(nodes(), dev.path(), "/proc");
                                  if (cat)
                                    return "catalogued " + std::to_string(cat->files().size());
                                  return cat.error().text();
                                });
  EXPECT_NE(answer.find("cannot list " + dev.path() + ": Too many open files"), std::string::npos)
      << answer;
  EXPECT_NE(answer.find("ulimit -n"), std::string::npos) << answer;
}

TEST(ResourceShortage, TheCollectorsScanSaysItFailedAndIsIncomplete) {
  SKIP_UNDER_SANITIZERS();  // the scan's threads meet the runtime's own need of descriptors
  StandInDev dev;
  std::optional<gpureap::collect::Collector> collector;
  auto answer = with_no_free_fd(
      [&] {
        gpureap::collect::Roots roots;
        roots.dev_root = dev.path();
        collector.emplace(*gpureap::collect::Collector::open(roots, nullptr));
      },
      [&] {
        auto view = collector->scan_processes();
        std::string out = view.holders_complete() ? "complete" : "incomplete";
        // What ran short, for the doctor's remedy: gpureap's own limit alone.
        for (auto k : view.scan_shortages) out += std::string(" ") + gpureap::core::to_string(k);
        for (const auto& f : view.scan_failures) out += "\n" + f;
        return out;
      });
  EXPECT_EQ(answer.rfind("incomplete own-descriptors\n", 0), 0u) << answer;
  EXPECT_NE(answer.find("Too many open files"), std::string::npos) << answer;
  EXPECT_NE(answer.find("ulimit -n"), std::string::npos) << answer;
}

// Out of descriptors, the advice raises gpureap's limit from what it is, never to a fixed figure
// (1024 may be the very limit it ran out under): up to the hard limit in any shell, and past it
// only as root or in the systemd unit.
TEST(ResourceShortage, TheAdviceRaisesTheLimitFromWhatItIs) {
  // shortage_remedy(EMFILE) in a forked child whose limit of open files is `soft`, hard `hard`.
  const auto remedy_with_limits = [](rlim_t soft, rlim_t hard) {
    return gpureap::testing::in_child_with_fd_limit(
        soft, hard, [] { return gpureap::procfs::shortage_remedy(EMFILE); });
  };
  EXPECT_EQ(remedy_with_limits(64, 128),
            "gpureap ran out of file descriptors (its limit is 64, hard limit 128); raise the "
            "limit of open files and run it again: `ulimit -n 128` in the shell (its hard limit; "
            "as root, more), LimitNOFILE=1024 in its systemd unit");
  EXPECT_EQ(remedy_with_limits(1024, 4096),
            "gpureap ran out of file descriptors (its limit is 1024, hard limit 4096); raise the "
            "limit of open files and run it again: `ulimit -n 2048` in the shell, "
            "LimitNOFILE=2048 in its systemd unit");
  // The soft limit is the hard one: no shell of this user can raise it.
  EXPECT_EQ(remedy_with_limits(1024, 1024),
            "gpureap ran out of file descriptors (its limit is 1024, hard limit 1024); raise the "
            "limit of open files, hard and soft, and run it again: `ulimit -Hn 2048; ulimit -n "
            "2048` in a root shell, LimitNOFILE=2048 in its systemd unit");
}

// Each errno of a shortage has its kind, and no other errno is one.
TEST(ResourceShortage, EachShortageHasTheKindItsRemedyFollows) {
  using gpureap::core::Shortage;
  using gpureap::procfs::shortage_of;
  EXPECT_EQ(shortage_of(EMFILE), Shortage::OwnDescriptors);
  EXPECT_EQ(shortage_of(ENFILE), Shortage::SystemFiles);
  EXPECT_EQ(shortage_of(ENOMEM), Shortage::Memory);
  EXPECT_EQ(shortage_of(ENOBUFS), Shortage::Memory);
  for (int err : {0, EACCES, ENOENT, ESRCH, EPERM, EIO}) {
    EXPECT_EQ(shortage_of(err), std::nullopt) << err;
    EXPECT_FALSE(gpureap::procfs::is_resource_shortage(err)) << err;
  }
  for (int err : {EMFILE, ENFILE, ENOMEM, ENOBUFS})
    EXPECT_TRUE(gpureap::procfs::is_resource_shortage(err)) << err;
}

}  // namespace

// What makes a process a device-file holder, on the real /proc: the file's number (a stand-in's
// device and inode), never the name its link shows; an O_PATH fd opens nothing; a process whose
// main thread has exited lives on in its other threads, with its fd table (src/procfs/fd_scan,
// proc_fs, thread_group, open_files).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/registry.h"
#include "procfs/device_files.h"
#include "procfs/fd_scan.h"
#include "procfs/file_read.h"
#include "procfs/open_files.h"
#include "procfs/parsers.h"
#include "procfs/proc_fs.h"
#include "procfs/thread_group.h"

namespace gpureap::procfs {
namespace holder_rules_test {

namespace fs = std::filesystem;

// A dev root of stand-ins, and beside it a folder for other names of the same files.
class StandIns {
 public:
  StandIns() {
    std::string tmpl = (fs::temp_directory_path() / "gpureap-holder-rules-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    top_ = tmpl;
    fs::create_directories(dev() + "/dri");
    fs::create_directories(top_ + "/elsewhere");
    for (const char* f : {"nvidia0", "nvidia1", "nvidiactl"})
      std::ofstream(dev() + "/" + f) << "stand-in\n";
  }
  ~StandIns() {
    std::error_code ec;
    fs::remove_all(top_, ec);
  }
  StandIns(const StandIns&) = delete;
  StandIns& operator=(const StandIns&) = delete;
  std::string dev() const { return top_ + "/dev"; }
  std::string dev(const std::string& name) const { return dev() + "/" + name; }
  std::string elsewhere(const std::string& name) const { return top_ + "/elsewhere/" + name; }

 private:
  std::string top_;
};

DeviceCatalog catalog_of(const StandIns& s) {
  auto cat = DeviceCatalog::enumerate(backend::device_nodes(backend::builtin_backends()), s.dev(),
                                      "/proc");
  EXPECT_TRUE(cat.ok()) << cat.error().text();
  return std::move(*cat);
}

int proc_root() {
  static int fd = ::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  return fd;
}

// "path fds=3,4" per hold.
std::string holds_of(const FdScan& scan) {
  std::string s;
  for (const auto& h : scan.holds) {
    s += h.path + " fds=";
    for (size_t i = 0; i < h.fds.size(); ++i) s += (i ? "," : "") + std::to_string(h.fds[i]);
    s += "\n";
  }
  return s;
}

struct OwnFd {
  int fd;
  OwnFd(const std::string& path, int flags) : fd(::open(path.c_str(), flags | O_CLOEXEC)) {
    if (fd < 0) throw std::runtime_error("cannot open " + path);
  }
  ~OwnFd() { ::close(fd); }
  OwnFd(const OwnFd&) = delete;
  OwnFd& operator=(const OwnFd&) = delete;
};

// ---- fdinfo ----

TEST(ProcfsFdinfoFlags, ReadsTheOctalFlagsLine) {
  EXPECT_EQ(parse_fdinfo_flags("pos:\t0\nflags:\t0100002\nmnt_id:\t27\nino:\t10953101\n"),
            0100002u);
  EXPECT_EQ(parse_fdinfo_flags("pos:\t0\nflags:\t012000000\nmnt_id:\t30\n").value() & O_PATH,
            static_cast<unsigned>(O_PATH));
  EXPECT_EQ(parse_fdinfo_flags("flags:\t02\n"), 02u);                     // first line, no pos
  EXPECT_EQ(parse_fdinfo_flags("pos:\t0\nflags:\t0100000"), 0100000u);    // no final newline
  EXPECT_EQ(parse_fdinfo_flags("pos:\t0\nmnt_id:\t27\n"), std::nullopt);  // no flags line
  EXPECT_EQ(parse_fdinfo_flags("flags:\t0109\n"), std::nullopt);          // not octal
  EXPECT_EQ(parse_fdinfo_flags("flags:\t\n"), std::nullopt);
  EXPECT_EQ(parse_fdinfo_flags("xflags:\t02\n"), std::nullopt);  // the key opens the line
  EXPECT_EQ(parse_fdinfo_flags(""), std::nullopt);
}

// ---- by number, not by name ----

TEST(ProcfsHolderRules, AFileOpenedUnderAnotherNameIsHeldByItsNumber) {
  StandIns s;
  auto cat = catalog_of(s);
  // A hard link: the same file (device and inode) under a name no catalogue entry has, as a
  // bind mount in the holder's own mount namespace would show it.
  ASSERT_EQ(::link(s.dev("nvidia0").c_str(), s.elsewhere("weights.bin").c_str()), 0);
  OwnFd renamed(s.elsewhere("weights.bin"), O_RDONLY);
  OwnFd plain(s.dev("nvidia1"), O_RDONLY);
  auto scan = scan_device_fds(proc_root(), ::getpid(), cat);
  EXPECT_TRUE(scan.readable);
  EXPECT_FALSE(scan.sealed);
  EXPECT_EQ(holds_of(scan), s.dev("nvidia0") + " fds=" + std::to_string(renamed.fd) + "\n" +
                                s.dev("nvidia1") + " fds=" + std::to_string(plain.fd) + "\n");
}

TEST(ProcfsHolderRules, AFileNamedLikeADeviceIsNotOne) {
  StandIns s;
  auto cat = catalog_of(s);
  // The name of a GPU file, another file: the name proves nothing either way.
  std::ofstream(s.elsewhere("nvidia0")) << "not a device\n";
  OwnFd decoy(s.elsewhere("nvidia0"), O_RDONLY);
  auto scan = scan_device_fds(proc_root(), ::getpid(), cat);
  EXPECT_EQ(holds_of(scan), "");
}

// ---- O_PATH ----

TEST(ProcfsHolderRules, AnOPathFdHoldsNothing) {
  StandIns s;
  auto cat = catalog_of(s);
  OwnFd path_only(s.dev("nvidia0"), O_PATH);
  EXPECT_EQ(holds_of(scan_device_fds(proc_root(), ::getpid(), cat)), "");
  OwnFd opened(s.dev("nvidia0"), O_RDWR);
  // Beside a real open, only that one counts.
  EXPECT_EQ(holds_of(scan_device_fds(proc_root(), ::getpid(), cat)),
            s.dev("nvidia0") + " fds=" + std::to_string(opened.fd) + "\n");
}

// ---- a process whose main thread has exited ----

// A forked child that opens `path`, forks a worker sharing it (when `worker`), starts a thread
// that lives on, and ends its main thread as pthread_exit() does. The test learns the thread's
// TID and the worker's PID through a pipe; both die with the child's group (SIGKILL).
class ThreadedJob {
 public:
  ThreadedJob(const std::string& path, bool worker) {
    int p[2];
    if (::pipe(p) != 0) throw std::runtime_error("pipe");
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork");
    if (pid_ == 0) {
      ::close(p[0]);
      write_end_ = p[1];
      if (::open(path.c_str(), O_RDWR) < 0) ::_exit(1);  // held until the child dies
      pid_t w = 0;
      if (worker && (w = ::fork()) == 0) {
        for (;;) ::pause();
      }
      send(w);
      pthread_t t;
      if (::pthread_create(&t, nullptr, &ThreadedJob::thread_body, nullptr) != 0) ::_exit(1);
      // As pthread_exit() ends it, without its unwinding (which the test framework would
      // catch in this forked copy of it).
      ::syscall(SYS_exit, 0);
    }
    ::close(p[1]);
    read_end_ = p[0];
    worker_ = receive();
    tid_ = receive();
    // The leader shows 'Z' once its main thread is gone: a state to wait for, not a delay.
    for (int i = 0; i < 60000 && raw_state() != 'Z'; ++i) ::usleep(1000);
  }
  ~ThreadedJob() {
    if (worker_ > 0) ::kill(worker_, SIGKILL);
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    ::close(read_end_);
  }
  ThreadedJob(const ThreadedJob&) = delete;
  ThreadedJob& operator=(const ThreadedJob&) = delete;
  pid_t pid() const { return pid_; }
  pid_t tid() const { return tid_; }
  pid_t worker() const { return worker_; }
  // The leader's own state letter in /proc/PID/stat.
  char raw_state() const {
    std::ifstream f("/proc/" + std::to_string(pid_) + "/stat");
    std::string line;
    std::getline(f, line);
    auto close = line.rfind(')');
    return close == std::string::npos || close + 2 >= line.size() ? '\0' : line[close + 2];
  }

 private:
  static void* thread_body(void*) {
    send(static_cast<pid_t>(::syscall(SYS_gettid)));
    for (;;) ::pause();
  }
  static void send(pid_t v) {
    if (::write(write_end_, &v, sizeof v) != sizeof v) ::_exit(1);
  }
  pid_t receive() {
    pid_t v = 0;
    if (::read(read_end_, &v, sizeof v) != sizeof v) throw std::runtime_error("no word");
    return v;
  }
  static inline int write_end_ = -1;
  int read_end_ = -1;
  pid_t pid_ = -1, worker_ = 0, tid_ = 0;
};

TEST(ProcfsThreadGroup, ALeaderWhoseThreadLivesReadsAsThatThread) {
  StandIns s;
  auto cat = catalog_of(s);
  ThreadedJob job(s.dev("nvidia0"), false);
  ASSERT_EQ(job.raw_state(), 'Z') << "the kernel shows the exited leader as a zombie";
  auto proc = ProcFs::open("/proc");
  ASSERT_TRUE(proc.ok());

  auto read = proc->read_process_stat(job.pid());
  ASSERT_TRUE(read.ok() && read->has_value());
  const StatRead& r = **read;
  EXPECT_FALSE(r.stat.is_zombie()) << r.stat.state;
  // The live thread's: asleep in pause(), or on a loaded machine still running towards it.
  EXPECT_TRUE(r.stat.state == 'S' || r.stat.state == 'R') << r.stat.state;
  EXPECT_EQ(r.stat.pid, job.pid());
  EXPECT_EQ(r.fd_task, job.tid());
  EXPECT_TRUE(r.stat.leader_exited);
  auto plain = proc->read_stat(job.pid());
  ASSERT_TRUE(plain.ok() && plain->has_value());
  EXPECT_TRUE((*plain)->state == 'S' || (*plain)->state == 'R') << (*plain)->state;

  // Its own table is empty; its thread's is the process's.
  EXPECT_EQ(holds_of(scan_device_fds(proc_root(), job.pid(), cat)), "");
  auto scan = scan_device_fds(proc_root(), job.pid(), cat, {}, r.fd_task);
  ASSERT_EQ(scan.holds.size(), 1u) << holds_of(scan);
  EXPECT_EQ(scan.holds[0].path, s.dev("nvidia0"));

  // Its program and command line are the thread's too (the leader's are empty).
  auto details = proc->read_details(job.pid(), false);
  ASSERT_TRUE(details.details.has_value());
  EXPECT_FALSE(details.details->cmdline.empty());
  EXPECT_TRUE(details.details->exe.has_value());
}

// The kernel keeps PF_EXITING on the exited leader for as long as the process runs on: the
// leader's end, not the process's. The process reads exiting only when its live thread is.
TEST(ProcfsThreadGroup, ALeaderWhoseThreadLivesIsNotExiting) {
  StandIns s;
  ThreadedJob job(s.dev("nvidia0"), false);
  const std::string dir = std::to_string(job.pid());
  auto leader = read_file_at(proc_root(), dir + "/stat");
  ASSERT_TRUE(leader.ok());
  auto leader_stat = parse_stat(leader.data);
  ASSERT_TRUE(leader_stat.ok());
  ASSERT_TRUE(leader_stat->is_zombie() && leader_stat->is_exiting())
      << "the kernel shows the exited leader as a zombie in do_exit(): " << leader.data;
  auto thread = read_file_at(proc_root(), dir + "/task/" + std::to_string(job.tid()) + "/stat");
  ASSERT_TRUE(thread.ok());
  auto thread_stat = parse_stat(thread.data);
  ASSERT_TRUE(thread_stat.ok());
  auto proc = ProcFs::open("/proc");
  ASSERT_TRUE(proc.ok());

  auto read = proc->read_process_stat(job.pid());
  ASSERT_TRUE(read.ok() && read->has_value());
  const core::ProcessStat& st = (*read)->stat;
  EXPECT_FALSE(st.is_exiting()) << std::hex << st.flags;
  EXPECT_EQ(st.flags, thread_stat->flags) << "the live thread's flags";
  EXPECT_TRUE(st.leader_exited);
  EXPECT_EQ(st.start_ticks, leader_stat->start_ticks);
  auto plain = proc->read_stat(job.pid());
  ASSERT_TRUE(plain.ok() && plain->has_value());
  EXPECT_FALSE((*plain)->is_exiting());
  EXPECT_TRUE((*plain)->leader_exited);
}

TEST(ProcfsThreadGroup, ATrueZombieStaysOne) {
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  siginfo_t info{};
  ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOWAIT), 0);
  auto proc = ProcFs::open("/proc");
  ASSERT_TRUE(proc.ok());
  auto read = proc->read_process_stat(child);
  ::waitpid(child, nullptr, 0);
  ASSERT_TRUE(read.ok() && read->has_value());
  EXPECT_TRUE((*read)->stat.is_zombie());
  EXPECT_TRUE((*read)->stat.is_exiting());
  EXPECT_FALSE((*read)->stat.leader_exited) << "no thread of it runs";
  EXPECT_EQ((*read)->fd_task, 0);
  EXPECT_FALSE(live_thread(proc_root(), child).has_value());
}

TEST(ProcfsThreadGroup, KcmpComparesAnExitedLeaderThroughItsThread) {
  StandIns s;
  auto cat = catalog_of(s);
  ThreadedJob job(s.dev("nvidia0"), true);
  auto proc = ProcFs::open("/proc");
  ASSERT_TRUE(proc.ok());
  std::vector<core::HostProcess> ps;
  for (pid_t pid : {job.pid(), job.worker()}) {
    auto r = proc->read_process_stat(pid);
    ASSERT_TRUE(r.ok() && r->has_value());
    core::HostProcess p;
    p.stat = (*r)->stat;
    p.devices = scan_device_fds(proc_root(), pid, cat, {}, (*r)->fd_task).holds;
    ASSERT_EQ(p.devices.size(), 1u) << "PID " << pid;
    ps.push_back(std::move(p));
  }
  std::sort(ps.begin(), ps.end(), [](const core::HostProcess& a, const core::HostProcess& b) {
    return a.stat.pid < b.stat.pid;
  });
  auto by_pid = ps;
  group_open_files(by_pid, true);  // the leader's PID alone: kcmp finds no table there
  auto grouped = ps;
  auto exact = group_open_files(grouped, true, proc_root());
  ASSERT_FALSE(exact.incomplete) << *exact.incomplete;
  ASSERT_EQ(grouped[0].devices.size(), 1u);
  ASSERT_EQ(grouped[1].devices.size(), 1u);
  ASSERT_TRUE(grouped[0].devices[0].open_file.has_value());
  EXPECT_EQ(grouped[0].devices[0].open_file, grouped[1].devices[0].open_file)
      << "the worker shares the job's open file";
  EXPECT_NE(by_pid[0].devices[0].open_file, by_pid[1].devices[0].open_file)
      << "compared by the exited leader's PID, the shared file is missed";
}

}  // namespace holder_rules_test
}  // namespace gpureap::procfs

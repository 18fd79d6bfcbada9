// What the holder scan shows a backend's fd observer (procfs/fd_observer.h) of GPU fds that
// /proc/PID/fd and /proc/PID/fdinfo do not show, on the real /proc, through both scan paths
// (the /proc walk, and the kernel's open-file iterator where it loads): a thread's own fd table
// (unshare(CLONE_FILES)), and the table of a process whose main thread has exited. Each fd is
// shown once, naming its table and the task whose fdinfo is its: the kernel's fdinfo there names
// the stand-in node's inode, where the process's own entry at that number names another file,
// or nothing.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "backend/backend_set.h"
#include "backend/drm/drm_backend.h"
#include "collect/collector.h"
#include "kernel/open_file_iterator.h"
#include "procfs/file_read.h"

namespace gpureap::testing {
namespace thread_fd_observers {

namespace fs = std::filesystem;

// One GPU fd shown to the observer; `its_file`: the fdinfo at the path it names is that of the
// stand-in node (its "ino:" line).
struct Seen {
  pid_t pid = 0, thread = 0, task = 0;
  int fd = -1;
  bool its_file = false;
  auto operator<=>(const Seen&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Seen& s) {
  return os << "{PID " << s.pid << " thread " << s.thread << " task " << s.task << " fd " << s.fd
            << (s.its_file ? " its fdinfo}" : " another file's fdinfo, or none}");
}

struct Record {
  ino_t node_ino = 0;
  std::mutex mutex;
  std::vector<Seen> seen;
};

// A backend that reports nothing and records what the scan shows its observer.
class Recorder final : public backend::GpuBackend, public procfs::FdObserver {
 public:
  explicit Recorder(std::shared_ptr<Record> record) : record_(std::move(record)) {}
  core::BackendReport collect() override {
    core::BackendReport r;
    r.name = "recorder";
    r.vendor = "test";
    r.available = true;
    return r;
  }
  procfs::FdObserver* fd_observer() override { return this; }
  void observe(const procfs::GpuFd& fd) override {
    auto info = procfs::read_file_at(fd.proc_dirfd, fd.fdinfo_path());
    const std::string want = "\nino:\t" + std::to_string(record_->node_ino) + "\n";
    const bool its = info.ok() && info.data.find(want) != std::string::npos;
    std::lock_guard lock(record_->mutex);
    record_->seen.push_back({fd.pid, fd.thread, fd.task, fd.fd, its});
  }

 private:
  std::shared_ptr<Record> record_;
};

std::string node_path;  // set before the forks: the stand-in render node the children open
std::atomic<int> thread_fd{-1};
std::atomic<pid_t> thread_id{0};

void* leave_table_and_open(void*) {
  if (::unshare(CLONE_FILES) != 0) ::_exit(97);
  int fd = ::open(node_path.c_str(), O_RDONLY);
  if (fd < 0) ::_exit(96);
  thread_id = static_cast<pid_t>(::syscall(SYS_gettid));
  thread_fd = fd;
  for (;;) ::pause();
}

void* wait_forever(void*) {
  thread_id = static_cast<pid_t>(::syscall(SYS_gettid));
  for (;;) ::pause();
}

// A child that runs `body` (which reports three numbers) and is killed at the end.
class Child {
 public:
  explicit Child(void (*body)(int report)) {
    int p[2];
    if (::pipe(p) != 0) throw std::runtime_error("pipe failed");
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(p[0]);
      body(p[1]);
      for (;;) ::pause();
    }
    ::close(p[1]);
    if (::read(p[0], values_, sizeof values_) != sizeof values_) values_[0] = -1;
    ::close(p[0]);
  }
  ~Child() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  pid_t pid() const { return pid_; }
  int value(int i) const { return values_[i]; }

 private:
  pid_t pid_ = -1;
  int values_[3] = {-1, -1, -1};
};

void report(int fd, int a, int b, int c) {
  int v[3] = {a, b, c};
  if (::write(fd, v, sizeof v) != sizeof v) ::_exit(92);
}

// Its main thread opens the node (fd `a`); a thread leaves the table and opens the node into
// its own (fd `b`); the main thread then puts /dev/null at `b` in its table. Reports tid, a, b.
void own_table(int out) {
  int a = ::open(node_path.c_str(), O_RDONLY);
  pthread_t t;
  if (a < 0 || ::pthread_create(&t, nullptr, leave_table_and_open, nullptr) != 0) ::_exit(95);
  while (thread_fd < 0) ::sched_yield();
  int null = ::open("/dev/null", O_RDONLY);
  if (null < 0) ::_exit(94);
  if (null != thread_fd && (::dup2(null, thread_fd) != thread_fd || ::close(null) != 0))
    ::_exit(93);
  report(out, thread_id, a, thread_fd);
}

// Its main thread opens the node, starts a thread and exits alone (the bare system call, as
// pthread_exit() makes it). Reports tid, fd.
void leader_exits(int out) {
  int fd = ::open(node_path.c_str(), O_RDONLY);
  pthread_t t;
  if (fd < 0 || ::pthread_create(&t, nullptr, wait_forever, nullptr) != 0) ::_exit(95);
  while (thread_id == 0) ::sched_yield();
  report(out, thread_id, fd, 0);
  ::syscall(SYS_exit, 0);
}

// The leader of `pid` has exited (its stat reads Z) while its process runs on.
bool leader_gone(pid_t pid) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    std::string stat;
    std::getline(std::ifstream("/proc/" + std::to_string(pid) + "/stat"), stat);
    auto close = stat.rfind(')');
    if (close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'Z')
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

class ThreadFdObservers : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "gpureap-observers-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dev_ = tmpl;
    fs::create_directories(dev_ + "/dri");
    node_path = dev_ + "/dri/renderD128";
    std::ofstream(node_path) << "stand-in\n";
    struct stat st {};
    ASSERT_EQ(::stat(node_path.c_str(), &st), 0);
    record_->node_ino = st.st_ino;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dev_, ec);
  }

  // One full scan of /proc; the observer's records, sorted.
  std::vector<Seen> scan(bool proc_only) {
    backend::BackendEntry entry{"recorder", "test", false,
                                [record = record_](const backend::BackendSettings&) {
                                  return std::make_unique<Recorder>(record);
                                }};
    entry.device_nodes = backend::drm::drm_nodes();
    backend::BackendSettings settings;
    settings.dev_root = dev_;
    settings.sys_root = dev_ + "/sys";
    auto c = collect::Collector::open({"/proc", dev_, dev_ + "/sys"},
                                      backend::BackendSet::make({entry}, settings, {}));
    if (!c.ok()) throw std::runtime_error(c.error().text());
    if (proc_only) c->keep_to_proc();
    {
      std::lock_guard lock(record_->mutex);
      record_->seen.clear();
    }
    c->scan_processes();
    std::lock_guard lock(record_->mutex);
    auto out = record_->seen;
    std::sort(out.begin(), out.end());
    return out;
  }

  void expect_every_fd_once_with_its_fdinfo(bool proc_only) {
    Child own(own_table);
    Child exited(leader_exits);
    ASSERT_GT(own.value(0), 0) << "the child's thread did not start";
    ASSERT_GT(exited.value(0), 0) << "the child's thread did not start";
    ASSERT_TRUE(leader_gone(exited.pid())) << "its main thread did not exit";
    const pid_t own_tid = own.value(0), live_tid = exited.value(0);
    std::vector<Seen> want = {
        {own.pid(), 0, 0, own.value(1), true},
        {own.pid(), own_tid, own_tid, own.value(1), true},  // inherited when it left the table
        {own.pid(), own_tid, own_tid, own.value(2), true},  // /dev/null in the process's table
        {exited.pid(), 0, live_tid, exited.value(1), true},
    };
    std::sort(want.begin(), want.end());
    EXPECT_EQ(scan(proc_only), want);
  }

  std::string dev_;
  std::shared_ptr<Record> record_ = std::make_shared<Record>();
};

TEST_F(ThreadFdObservers, TheProcWalkShowsEachTablesFdsWithTheirOwnFdinfo) {
  expect_every_fd_once_with_its_fdinfo(true);
}

// Where the pass covers a process it lists only its leader's table's GPU fds; a thread's GPU
// file in a table of its own sends the scan to that table, whose fds the observer sees as above.
TEST_F(ThreadFdObservers, TheKernelIteratorsScanShowsTheSame) {
  if (!kernel::OpenFileIterator::permitted()) GTEST_SKIP() << "this user may not load BPF programs";
  auto it = kernel::OpenFileIterator::load();
  if (!it) GTEST_SKIP() << "no open-file iterator here: " << it.error().text();
  expect_every_fd_once_with_its_fdinfo(false);
}

}  // namespace thread_fd_observers
}  // namespace gpureap::testing

// DRM clients held in fd tables that /proc/PID/fdinfo does not show, through the real holder
// scan, the DRM backend and the join: a thread that left its process's table
// (unshare(CLONE_FILES)) and opened the node, its fdinfo under /proc/PID/task/TID; and a process
// whose main thread has exited, whose /proc/PID/fdinfo is empty while its threads run on. The
// memory is the process's, each client once: a client the thread's table inherited from the
// process's is not counted twice, and the same fd number in two tables is two fds.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <vector>

#include "backend/backend_set.h"
#include "backend/drm/drm_backend.h"
#include "byte_units.h"
#include "collect/collector.h"
#include "drm_machine.h"

namespace gpureap::testing {
namespace drm_thread_tables {

const std::string kAmd = "0000:03:00.0";
const std::string kNode = "dri/renderD128";

collect::Collector collector(const DrmMachine& m) {
  backend::BackendSettings settings;
  settings.proc_root = m.proc_root();
  settings.dev_root = m.dev_root();
  settings.sys_root = m.sys_root();
  backend::Registry registry{backend::drm::amd_entry(), backend::drm::intel_entry()};
  auto c = collect::Collector::open({m.proc_root(), m.dev_root(), m.sys_root()},
                                    backend::BackendSet::make(registry, settings, {}));
  if (!c.ok()) throw std::runtime_error(c.error().text());
  return std::move(*c);
}

std::vector<pid_t> listed_pids(const core::Gpu& g) {
  std::vector<pid_t> out;
  for (const auto& p : g.processes) out.push_back(p.pid);
  return out;
}

// Every warning a snapshot or a driver reading carries, one per line.
std::string warnings_of(const std::vector<std::string>& all) {
  std::string out;
  for (const auto& w : all) out += w + "\n";
  return out;
}

// A process's figures on one GPU: its memory, its regions' resident bytes, its sharers.
struct Figures {
  pid_t pid = 0;
  std::optional<uint64_t> used;
  std::optional<uint64_t> vram, gtt;
  std::vector<pid_t> sharers;
  bool operator==(const Figures&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Figures& f) {
  auto n = [](const std::optional<uint64_t>& v) {
    return v ? std::to_string(*v / kMiB) + " MiB" : std::string("-");
  };
  os << "{PID " << f.pid << " used " << n(f.used) << " vram " << n(f.vram) << " gtt " << n(f.gtt)
     << " sharers";
  for (pid_t p : f.sharers) os << " " << p;
  return os << "}";
}

std::vector<Figures> figures(const core::Gpu& g) {
  std::vector<Figures> out;
  for (const auto& p : g.processes) {
    Figures f{p.pid, p.used_bytes, {}, {}, p.sharers};
    for (const auto& r : p.regions) {
      if (r.name == "vram") f.vram = r.resident_bytes;
      if (r.name == "gtt") f.gtt = r.resident_bytes;
    }
    out.push_back(f);
  }
  return out;
}

// --- a thread with a table of its own ---------------------------------------------------------

// What the child's threads did: the thread that left the table, the fd both tables hold (opened
// before it left), the fd number the thread's table holds its own client at, which the
// process's table holds another client at.
struct ChildFds {
  pid_t tid = 0;
  int inherited = -1;
  int same_number = -1;
};

std::string node_path;           // set before the fork: the stand-in node the child opens
std::atomic<int> thread_fd{-1};  // in the child: what its thread opened in its own table
std::atomic<pid_t> thread_id{0};

void* leave_table_and_open(void*) {
  if (::unshare(CLONE_FILES) != 0) ::_exit(97);
  int fd = ::open(node_path.c_str(), O_RDONLY);
  if (fd < 0) ::_exit(96);
  thread_id = static_cast<pid_t>(::syscall(SYS_gettid));
  thread_fd = fd;
  for (;;) ::pause();
}

// A real process laid out in the tree as the kernel shows it: its main thread opened the node
// (`inherited`); a thread then left the table, so its table holds that open file too, and opened
// the node into a table of its own (`same_number`); the main thread then opened the node again
// into that same number of its table. kcmp compares the real tables and open files.
class ThreadTableClients : public ::testing::Test {
 protected:
  void SetUp() override {
    m_.amd_gpu(0, 128, kAmd, 16 * kGiB, 1 * kGiB);
    m_.names_own_processes();
    node_path = m_.path("dev/" + kNode);
    int p[2];
    ASSERT_EQ(::pipe(p), 0);
    child_ = ::fork();
    ASSERT_GE(child_, 0);
    if (child_ == 0) {
      ::close(p[0]);
      ChildFds fds;
      fds.inherited = ::open(node_path.c_str(), O_RDONLY);
      pthread_t t;
      if (fds.inherited < 0 || ::pthread_create(&t, nullptr, leave_table_and_open, nullptr) != 0)
        ::_exit(95);
      while (thread_fd < 0) ::sched_yield();
      fds.tid = thread_id;
      fds.same_number = thread_fd;
      int again = ::open(node_path.c_str(), O_RDONLY);
      if (again < 0) ::_exit(94);
      if (again != fds.same_number) {
        if (::dup2(again, fds.same_number) != fds.same_number) ::_exit(93);
        ::close(again);
      }
      if (::write(p[1], &fds, sizeof fds) != sizeof fds) ::_exit(92);
      for (;;) ::pause();
    }
    ::close(p[1]);
    ASSERT_EQ(::read(p[0], &fds_, sizeof fds_), static_cast<ssize_t>(sizeof fds_))
        << "the child did not start its thread";
    ::close(p[0]);
  }
  void TearDown() override {
    if (child_ > 0) {
      ::kill(child_, SIGKILL);
      ::waitpid(child_, nullptr, 0);
    }
  }

  // The tree: the process's table (its own entry and its main thread's) and the thread's own.
  void lay_out(const std::string& inherited, const std::string& process_own,
               const std::string& thread_own) {
    m_.process(child_, "trainer", 1, child_, child_, 'S', 2);
    for (pid_t task : {pid_t{0}, child_}) {
      if (task) m_.task(child_, task, "trainer");
      m_.open_fd(child_, fds_.inherited, kNode, inherited, task);
      m_.open_fd(child_, fds_.same_number, kNode, process_own, task);
    }
    m_.task(child_, fds_.tid, "trainer");
    m_.open_fd(child_, fds_.inherited, kNode, inherited, fds_.tid);
    m_.open_fd(child_, fds_.same_number, kNode, thread_own, fds_.tid);
  }

  // The holds the scan found: "thread fds open_file" per open file.
  std::vector<std::string> holds(const core::Snapshot& s) const {
    std::vector<std::string> out;
    for (const auto& p : s.proc.processes)
      for (const auto& h : p.devices) {
        std::string line = std::to_string(p.stat.pid) + " " + std::to_string(h.thread);
        for (int fd : h.fds) line += " " + std::to_string(fd);
        out.push_back(line + " " + h.open_file.value_or("-"));
      }
    std::sort(out.begin(), out.end());
    return out;
  }
  std::vector<std::string> expected_holds() const {
    const std::string pid = std::to_string(child_), tid = std::to_string(fds_.tid);
    const std::string inherited = std::to_string(fds_.inherited);
    const std::string same = std::to_string(fds_.same_number);
    std::vector<std::string> out = {
        pid + " 0 " + inherited + " " + pid + ":" + inherited,
        pid + " 0 " + same + " " + pid + ":" + same,
        pid + " " + tid + " " + inherited + " " + pid + ":" + inherited,  // the same open file
        pid + " " + tid + " " + same + " " + tid + ":" + same,
    };
    std::sort(out.begin(), out.end());
    return out;
  }

  DrmMachine m_;
  pid_t child_ = -1;
  ChildFds fds_;
};

// drm-client-id names each client: the one both tables hold (id 1) is counted once, the thread's
// own (id 2) and the process's at the same fd number (id 3) each once, all on the process.
TEST_F(ThreadTableClients, AThreadsOwnClientIsTheProcesssAndAnInheritedOneCountsOnce) {
  lay_out(DrmMachine::amdgpu_fdinfo(kAmd, 1, 512 * 1024, 4096),
          DrmMachine::amdgpu_fdinfo(kAmd, 3, 128 * 1024, 1024),
          DrmMachine::amdgpu_fdinfo(kAmd, 2, 256 * 1024, 2048));
  auto c = collector(m_);
  auto s = c.collect();
  ASSERT_FALSE(s.proc.open_files_unknown) << *s.proc.open_files_unknown;
  EXPECT_EQ(holds(s), expected_holds());
  ASSERT_EQ(s.drivers.gpus.size(), 1u);
  const auto& g = s.drivers.gpus[0];
  EXPECT_EQ(*s.drivers.backends[0].detail("drm_clients"), "3");
  EXPECT_EQ(figures(g), (std::vector<Figures>{{child_, 896 * kMiB, 896 * kMiB, 7 * kMiB, {}}}));
  auto summary = s.memory_summary(g);
  EXPECT_EQ(summary.attributed_bytes, 896 * kMiB);
  EXPECT_EQ(summary.ghost_bytes, 0u);
  EXPECT_EQ(summary.unattributed_bytes, 128 * kMiB);
  EXPECT_EQ(warnings_of(s.all_warnings()), "");

  // Between scans each fd is read again where the scan read it: the thread's own client still
  // through the thread's entry, and gone once the thread's table no longer holds it.
  auto again = c.read_drivers();
  EXPECT_EQ(figures(again.gpus[0]),
            (std::vector<Figures>{{child_, 896 * kMiB, 896 * kMiB, 7 * kMiB, {}}}));
  m_.close_fd(child_, fds_.same_number, fds_.tid);
  auto closed = c.read_drivers();
  EXPECT_EQ(figures(closed.gpus[0]),
            (std::vector<Figures>{{child_, 640 * kMiB, 640 * kMiB, 5 * kMiB, {}}}));
  EXPECT_EQ(warnings_of(closed.backends[0].warnings), "");
}

// amdgpu before 5.19 without a pasid either: nothing but the open file names a client. The
// thread's table holds the process's first open file (one client) and, at a number the
// process's table holds another at, an open file of its own (a third client).
TEST_F(ThreadTableClients, ClientsWithoutAnIdAreTheOpenFilesOfEachTable) {
  m_.kernel("5.15.0-91-generic");
  lay_out(DrmMachine::amdgpu_5_15_fdinfo(kAmd, 0, 512 * 1024, 4096),
          DrmMachine::amdgpu_5_15_fdinfo(kAmd, 0, 128 * 1024, 1024),
          DrmMachine::amdgpu_5_15_fdinfo(kAmd, 0, 256 * 1024, 2048));
  auto s = collector(m_).collect();
  ASSERT_FALSE(s.proc.open_files_unknown) << *s.proc.open_files_unknown;
  EXPECT_EQ(holds(s), expected_holds());
  const auto& g = s.drivers.gpus[0];
  EXPECT_EQ(*s.drivers.backends[0].detail("drm_clients"), "3");
  EXPECT_EQ(figures(g), (std::vector<Figures>{{child_, 896 * kMiB, 896 * kMiB, 7 * kMiB, {}}}));
  EXPECT_EQ(s.memory_summary(g).attributed_bytes, 896 * kMiB);
  EXPECT_EQ(warnings_of(s.all_warnings()), "");
}

// --- a process whose main thread has exited ---------------------------------------------------

// A job whose main thread called pthread_exit() (300): its leader is a zombie with PF_EXITING,
// /proc/300/fd and /proc/300/fdinfo are empty, and the table its threads share shows under a
// live thread's entry. Beside it, an ordinary job (400). No process of the tree is real: the
// exited leader's table is read through its thread whether or not kcmp can be used.
TEST(DrmExitedLeader, ItsClientsAreReadThroughALiveThreadAndAreTheProcesss) {
  DrmMachine m;
  m.amd_gpu(0, 128, kAmd, 16 * kGiB, 2 * kGiB);
  const std::string job = DrmMachine::amdgpu_fdinfo(kAmd, 9, 768 * 1024, 2048);
  m.process(300, "job", 1, 300, 300, 'Z', 2, DrmMachine::kTaskFlags | DrmMachine::kExiting);
  m.task(300, 300, "job", 'Z', DrmMachine::kTaskFlags | DrmMachine::kExiting);
  m.task(300, 301, "job");
  m.open_fd(300, 5, kNode, job, 301);
  m.open_fd(300, 6, kNode, job, 301);  // dup'd: the same client
  m.process(400, "render", 1, 400, 400);
  m.open_fd(400, 5, kNode, DrmMachine::amdgpu_fdinfo(kAmd, 10, 256 * 1024, 0));

  auto c = collector(m);
  auto s = c.collect();
  const auto* row = s.proc.find(300);
  ASSERT_NE(row, nullptr);
  ASSERT_EQ(row->devices.size(), 1u);
  EXPECT_EQ(row->devices[0].fds, (std::vector<int>{5, 6}));
  EXPECT_EQ(row->devices[0].thread, 0) << "the process's own table, read through its thread";
  const auto& g = s.drivers.gpus[0];
  EXPECT_EQ(*s.drivers.backends[0].detail("drm_clients"), "2");
  EXPECT_EQ(figures(g), (std::vector<Figures>{{300, 768 * kMiB, 768 * kMiB, 2 * kMiB, {}},
                                              {400, 256 * kMiB, 256 * kMiB, 0, {}}}));
  EXPECT_EQ(s.memory_summary(g).attributed_bytes, 1 * kGiB);
  EXPECT_EQ(warnings_of(s.all_warnings()), "");

  // Between scans, read again through the same thread: held while it holds it, then gone.
  EXPECT_EQ(figures(c.read_drivers().gpus[0]),
            (std::vector<Figures>{{300, 768 * kMiB, 768 * kMiB, 2 * kMiB, {}},
                                  {400, 256 * kMiB, 256 * kMiB, 0, {}}}));
  m.close_fd(300, 5, 301);
  m.close_fd(300, 6, 301);
  EXPECT_EQ(figures(c.read_drivers().gpus[0]),
            (std::vector<Figures>{{400, 256 * kMiB, 256 * kMiB, 0, {}}}));
}

}  // namespace drm_thread_tables
}  // namespace gpureap::testing

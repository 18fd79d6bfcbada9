// A thread that leaves its process's fd table (unshare(CLONE_FILES)) and opens a GPU file there
// holds it where /proc/PID/fd (the main thread's table) does not show it. Both scan paths must
// find it, name the thread, and keep the row (and what a kill signals) the process's; threads
// that share the table are not read twice. Real processes and threads, stand-in device files.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>

#include "support.h"

namespace gpureap::testing {
namespace thread_tables {

using nlohmann::json;

// What the start routine of a thread of a test child does.
struct ThreadJob {
  std::string path;  // the file it opens after unsharing its table; empty: it opens none
  bool unshare = true;
  std::atomic<pid_t> tid{0};
};

void* run_thread(void* arg) {
  auto* job = static_cast<ThreadJob*>(arg);
  if (job->unshare && ::unshare(CLONE_FILES) != 0) ::_exit(97);
  if (!job->path.empty()) hold(job->path);
  job->tid = static_cast<pid_t>(::syscall(SYS_gettid));
  for (;;) ::pause();
}

// Starts a thread on `job` and waits until it has done it; its thread id.
pid_t start_thread(ThreadJob& job) {
  pthread_t t;
  if (::pthread_create(&t, nullptr, run_thread, &job) != 0) ::_exit(96);
  while (job.tid == 0) ::sched_yield();
  return job.tid;
}

// Every holder a scene has, and the processes that must not be taken for one.
struct Scene {
  FakeDevRoot dev;
  Ready own_ready, shared_ready, idle_ready;
  // Its thread holds nvidia1 in a table of its own; its main thread opens nvidia0 afterwards,
  // so each table holds one file the other lacks.
  ThreadJob own_job{dev.dev("nvidia1")};
  Child own{[this] {
    own_ready.send(start_thread(own_job));
    hold(dev.dev("nvidia0"));
  }};
  // Three threads on one table that holds nvidia0 once: one row, one hold, one fd.
  ThreadJob shared_a{"", false}, shared_b{"", false};
  Child shared{[this] {
    hold(dev.dev("nvidia0"));
    start_thread(shared_a);
    start_thread(shared_b);
    shared_ready.signal();
  }};
  // A thread with a table of its own that holds no GPU file: no holder.
  ThreadJob idle_job{""};
  Child idle{[this] {
    start_thread(idle_job);
    idle_ready.signal();
  }};
  Child plain = holding(dev, "nvidiactl");
  pid_t own_thread = 0;
  Scene() {
    own_thread = static_cast<pid_t>(own_ready.receive());
    shared_ready.wait();
    idle_ready.wait();
  }
};

// Each holder's holds: "PID path thread fds" (thread "-" for the process's table).
std::vector<std::string> holdings(const json& snap) {
  std::vector<std::string> out;
  for (const auto& p : snap["processes"])
    for (const auto& d : p["devices"])
      out.push_back(std::to_string(p["pid"].get<pid_t>()) + " " + d["path"].get<std::string>() +
                    " " + (d["thread"].is_null() ? "-" : std::to_string(d["thread"].get<pid_t>())) +
                    " " + std::to_string(d["fds"].size()));
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> expected(const Scene& s) {
  auto line = [](pid_t pid, const std::string& path, const std::string& thread) {
    return std::to_string(pid) + " " + path + " " + thread + " 1";
  };
  std::vector<std::string> want = {
      line(s.own.pid(), s.dev.dev("nvidia0"), "-"),
      line(s.own.pid(), s.dev.dev("nvidia1"), std::to_string(s.own_thread)),
      line(s.shared.pid(), s.dev.dev("nvidia0"), "-"),
      line(s.plain.pid(), s.dev.dev("nvidiactl"), "-"),
  };
  std::sort(want.begin(), want.end());
  return want;
}

void expect_the_whole_holder_list(const Scene& s, const json& snap) {
  EXPECT_EQ(holdings(snap), expected(s)) << snap["processes"].dump(2);
  EXPECT_TRUE(row_of(snap, s.idle.pid()).is_null()) << snap["processes"].dump(2);
  EXPECT_TRUE(row_of(snap, s.own_thread).is_null()) << "a thread is no row of its own";
  EXPECT_EQ(snap["complete"], true) << snap.dump(2);
  // The thread's open file is its own: its id names the thread's table.
  const json own = row_of(snap, s.own.pid());  // kept: a range over a temporary's part dangles
  for (const auto& d : own["devices"]) {
    if (d["thread"].is_null()) continue;
    EXPECT_EQ(d["open_file"],
              std::to_string(s.own_thread) + ":" + std::to_string(d["fds"][0].get<int>()));
  }
}

TEST(ThreadTables, ProcScanFindsAThreadsOwnTableAndReadsASharedOneOnce) {
  Scene s;
  auto snap = run_json({"ps", "--json", "--dev-root", s.dev.path(), "--nvml-library", kNoNvml},
                       {"GPUREAP_BPF=0"});
  expect_the_whole_holder_list(s, snap);
  auto text =
      run_gpureap({"ps", "--dev-root", s.dev.path(), "--nvml-library", kNoNvml, "--no-color"},
                  {"GPUREAP_BPF=0", "COLUMNS=300"});
  EXPECT_NE(text.out.find("nvidia1@" + std::to_string(s.own_thread)), std::string::npos)
      << text.out << text.err;
}

TEST(ThreadTables, KernelIteratorFindsTheSameHolders) {
  if (::geteuid() != 0) GTEST_SKIP() << "loading the iterator needs root";
  Scene s;
  auto r = run_gpureap({"ps", "--json", "--dev-root", s.dev.path(), "--nvml-library", kNoNvml},
                       {"GPUREAP_TIMING=1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  if (r.err.find("kernel open-file pass") == std::string::npos)
    GTEST_SKIP() << "the kernel's open-file iterator did not run here: " << r.err;
  expect_the_whole_holder_list(s, parse_output(r));
}

TEST(ThreadTables, AKillOfTheThreadsGpuSignalsTheProcessNeverTheThread) {
  REQUIRE_DOUBLE();
  Scene s;
  FakeNvml nvml(idle_gpus());
  auto plan =
      parse_output(run_gpureap(gpu_kill_args(s.dev, {"--dry-run", "--gpu", "1"}), nvml.env()));
  EXPECT_EQ(planned_pids(plan), std::vector<pid_t>{s.own.pid()}) << plan.dump(2);
}

// A /proc of another PID namespace (a copy of the fixture tree: its `self` is not this process)
// names other processes by its numbers, and kcmp(2) would compare this namespace's processes of
// those numbers: there a thread's table is never read as one of its own. The fixture's process
// takes this test's PID and lists a "thread" whose number is a real child's, whose table kcmp
// would call another; the thread's entry shows the file its process's table shows.
TEST(ThreadTables, AProcOfAnotherNamespaceReadsNoThreadTableByKcmp) {
  namespace fs = std::filesystem;
  FakeDevRoot dev;
  Child other{[] { ::pause(); }};
  const std::string root = dev.path() + "/proc";
  fs::copy(std::string(GPUREAP_FIXTURES) + "/proc/host", root,
           fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  const std::string pid = std::to_string(::getpid()), tid = std::to_string(other.pid());
  const std::string me = root + "/" + pid;
  fs::copy(root + "/4242", me, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  std::string stat;
  std::getline(std::ifstream(me + "/stat"), stat);
  std::ofstream(me + "/stat") << pid << stat.substr(stat.find(' ')) << "\n";  // 48 threads
  fs::create_directories(me + "/fd");
  fs::create_directories(me + "/task/" + pid);
  fs::create_directories(me + "/task/" + tid + "/fd");
  fs::create_symlink(dev.dev("nvidia0"), me + "/fd/3");
  fs::create_symlink(dev.dev("nvidia0"), me + "/task/" + tid + "/fd/3");

  auto snap = run_json(
      {"ps", "--json", "--proc-root", root, "--dev-root", dev.path(), "--nvml-library", kNoNvml},
      {"GPUREAP_BPF=0"});
  const auto row = row_of(snap, ::getpid());
  ASSERT_FALSE(row.is_null()) << snap.dump(2);
  ASSERT_EQ(row["devices"].size(), 1u) << row.dump(2);
  EXPECT_EQ(row["devices"][0]["path"], dev.dev("nvidia0"));
  EXPECT_TRUE(row["devices"][0]["thread"].is_null()) << row.dump(2);
  EXPECT_EQ(row["devices"][0]["fds"], json::array({3}));
  EXPECT_TRUE(row_of(snap, other.pid()).is_null()) << snap.dump(2);
}

}  // namespace thread_tables
}  // namespace gpureap::testing

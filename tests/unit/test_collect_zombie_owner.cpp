// The collector over real processes: a launcher's exited children that it has not reaped carry
// how each ended (its stat's wait status) and whose it was (its status's uid, the one detail a
// zombie keeps), so core::distributed_jobs tells a process of the job that failed from a helper
// that exited 0 and from another user's child.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <thread>

#include "collect/collector.h"
#include "core/distributed_job.h"

namespace gpureap::collect {
namespace {
namespace zombie_owner {

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

char state_of(pid_t pid) {
  const std::string stat = read_all("/proc/" + std::to_string(pid) + "/stat");
  const auto close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() ? stat[close + 2] : '?';
}

bool wait_for(const std::function<bool()>& done) {
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
       std::chrono::steady_clock::now() < until;) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return done();
}

// In the launcher: a rank that opens its GPU file itself, then runs sleep with the labels of
// local rank `n` of 3 (the environment of an exec, which /proc/PID/environ shows).
pid_t start_rank(const std::string& file, int n) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  if (::open(file.c_str(), O_RDONLY) < 0) ::_exit(98);
  const std::string local = "LOCAL_RANK=" + std::to_string(n), rank = "RANK=" + std::to_string(n);
  const char* env[] = {local.c_str(), rank.c_str(), "LOCAL_WORLD_SIZE=3", "WORLD_SIZE=3", nullptr};
  ::execle("/bin/sleep", "sleep", "1000", static_cast<char*>(nullptr), env);
  ::_exit(127);
}

// In the launcher: a child that ends as `end` says and is never reaped.
pid_t start_child(const std::function<void()>& end) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    end();
    ::_exit(0);
  }
  return pid;
}

class CollectZombieOwner : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpureap-zombie-owner-XXXXXX";
    dev_ = ::mkdtemp(tmpl);
    for (const char* f : {"/nvidia0", "/nvidia1"}) std::ofstream(dev_ + f) << "stand-in\n";
  }
  void TearDown() override {
    if (launcher_ > 0) {
      for (pid_t p : kids_) ::kill(p, SIGKILL);
      ::kill(launcher_, SIGKILL);
      ::waitpid(launcher_, nullptr, 0);
    }
    std::filesystem::remove_all(dev_);
  }

  std::string dev_;
  pid_t launcher_ = -1;
  std::vector<pid_t> kids_;  // the launcher's children, as it wrote them to us
};

// A launcher runs ranks 0 and 1 of 3, and has four children it never reaps: one SIGKILLed, one
// that exited 1, a helper that exited 0, and (as root) one that became another user and exited 1.
// The view has each one's wait status and uid; the job has the first two as its failed processes
// (rank 2 is missing, so it is stalled), the helper as its doubt, and nothing of the other user's.
TEST_F(CollectZombieOwner, ALaunchersZombieChildrenCarryHowTheyEndedAndWhoseTheyWere) {
  const bool root = ::geteuid() == 0;
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const std::string dev = dev_;
  launcher_ = ::fork();
  ASSERT_GE(launcher_, 0);
  if (launcher_ == 0) {
    ::close(pipe_fds[0]);
    std::vector<pid_t> kids{start_rank(dev + "/nvidia0", 0), start_rank(dev + "/nvidia1", 1),
                            start_child([] {
                              for (;;) ::pause();
                            }),
                            start_child([] { ::_exit(1); }), start_child([] { ::_exit(0); })};
    if (root)
      kids.push_back(start_child([] {
        if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(3);
        ::_exit(1);
      }));
    ::kill(kids[2], SIGKILL);
    const auto bytes = static_cast<ssize_t>(kids.size() * sizeof(pid_t));
    if (::write(pipe_fds[1], kids.data(), static_cast<size_t>(bytes)) != bytes) ::_exit(99);
    for (;;) ::pause();
  }
  ::close(pipe_fds[1]);
  kids_.resize(root ? 6 : 5);
  const auto bytes = static_cast<ssize_t>(kids_.size() * sizeof(pid_t));
  ASSERT_EQ(::read(pipe_fds[0], kids_.data(), static_cast<size_t>(bytes)), bytes);
  ::close(pipe_fds[0]);
  for (size_t i = 0; i < 2; ++i)
    ASSERT_TRUE(wait_for([&] {
      return read_all("/proc/" + std::to_string(kids_[i]) + "/environ").find("LOCAL_RANK=") !=
             std::string::npos;
    })) << "rank "
        << i << " did not start";
  for (size_t i = 2; i < kids_.size(); ++i)
    ASSERT_TRUE(wait_for([&] { return state_of(kids_[i]) == 'Z'; })) << kids_[i];

  auto c = Collector::open({"/proc", dev_}, nullptr);
  ASSERT_TRUE(c.ok()) << c.error().text();
  const auto view = c->scan_processes();
  const pid_t killed = kids_[2], failed = kids_[3], helper = kids_[4];
  const auto* k = view.find(killed);
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->stat.wait_status, SIGKILL);
  ASSERT_TRUE(k->details);
  EXPECT_EQ(k->details->uid, ::getuid());
  ASSERT_NE(view.find(failed), nullptr);
  EXPECT_EQ(view.find(failed)->stat.wait_status, 1 << 8);
  ASSERT_NE(view.find(helper), nullptr);
  EXPECT_EQ(view.find(helper)->stat.wait_status, 0);
  if (root) {
    const auto* other = view.find(kids_[5]);
    ASSERT_NE(other, nullptr);
    ASSERT_TRUE(other->details);
    EXPECT_EQ(other->details->uid, 65534u);
  }

  std::optional<core::DistributedJob> job;
  for (auto& j : core::distributed_jobs(view))
    if (j.launcher == launcher_) job = j;
  ASSERT_TRUE(job);
  EXPECT_EQ(job->missing, std::vector<unsigned>{2});
  std::vector<pid_t> failed_pids;
  for (const auto& f : job->failed) failed_pids.push_back(f.pid);
  std::sort(failed_pids.begin(), failed_pids.end());
  std::vector<pid_t> expected{killed, failed};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(failed_pids, expected);
  EXPECT_EQ(job->unreaped, std::vector<pid_t>{helper});
  EXPECT_TRUE(job->stalled());
}

}  // namespace zombie_owner
}  // namespace
}  // namespace gpureap::collect

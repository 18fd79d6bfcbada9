// FanotifyWatch (src/track/fanotify_watch.cpp) on stand-in device files in a temp dir, opened and
// closed by this process and forked children: who an open and a final close are reported for,
// what is left out, the queue's overflow, and the refusal without CAP_SYS_ADMIN.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "track/fanotify_watch.h"
#include "unprivileged_child.h"

namespace gpureap::track {
namespace {

namespace fs = std::filesystem;
using FileEventList = std::vector<FileEvent>;

// A forked child that runs `body` when told to go (a byte on a pipe) and exits when told to
// finish (the pipe closed), so a test decides when it opens and when it ends.
class Child {
 public:
  explicit Child(std::function<void()> at_go) {
    if (::pipe(pipe_) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(pipe_[1]);
      char c;
      if (::read(pipe_[0], &c, 1) == 1) at_go();
      while (::read(pipe_[0], &c, 1) > 0) {
      }
      ::_exit(0);
    }
    ::close(pipe_[0]);
  }
  ~Child() { finish(); }
  void go() {
    char c = 'g';
    ASSERT_EQ(::write(pipe_[1], &c, 1), 1);
  }
  void finish() {
    if (pipe_[1] >= 0) ::close(pipe_[1]);
    pipe_[1] = -1;
    if (pid_ > 0) ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  pid_t pid() const { return pid_; }

 private:
  int pipe_[2] = {-1, -1};
  pid_t pid_ = -1;
};

class FanotifyWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpureap-fanotify-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    fs::create_directory(dir_ / "dri");
    nvidia0_ = make_file("nvidia0");
    render_ = make_file("dri/renderD128");
    other_ = make_file("other");
    auto w = FanotifyWatch::open({nvidia0_, render_});
    if (!w && w.error().message.find("CAP_SYS_ADMIN") != std::string::npos)
      GTEST_SKIP() << w.error().text();
    ASSERT_TRUE(w) << w.error().text();
    watch_.emplace(std::move(*w));
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string make_file(const std::string& name) {
    std::string path = dir_ / name;
    std::ofstream(path) << "stand-in\n";
    return path;
  }

  // Reads until `done` holds for what came so far, waiting for the fd up to a minute (a loaded
  // machine); then once more, so that anything queued with the awaited event is in too.
  FileEventList collect(const std::function<bool(const FileEventList&)>& done,
                        bool* overflow = nullptr) {
    FileEventList got;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    auto take = [&] {
      auto batch = watch_->read();
      if (overflow) *overflow = *overflow || batch.overflow;
      got.insert(got.end(), batch.events.begin(), batch.events.end());
    };
    while (!done(got) && std::chrono::steady_clock::now() < deadline) {
      pollfd p{watch_->fd(), POLLIN, 0};
      ::poll(&p, 1, 100);
      take();
    }
    take();
    return got;
  }

  fs::path dir_;
  std::string nvidia0_, render_, other_;
  std::optional<FanotifyWatch> watch_;
};

bool has(const FileEventList& events, FileEvent::Kind kind, pid_t pid, const std::string& path) {
  for (const auto& e : events)
    if (e.kind == kind && e.pid == pid && e.path == path) return true;
  return false;
}

std::string describe(const FileEventList& events) {
  std::string s;
  for (const auto& e : events)
    s += std::string(e.kind == FileEvent::Kind::Open ? "open " : "close ") + std::to_string(e.pid) +
         " " + e.path + "\n";
  return s.empty() ? "(none)" : s;
}

int open_file(const std::string& path) {
  return ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
}

TEST_F(FanotifyWatchTest, ChildsOpenIsReportedWithItsPidAndThePath) {
  std::string path = nvidia0_;
  Child child([&] { open_file(path); });  // held until the child exits
  child.go();
  auto opened = collect([&](const FileEventList& e) { return !e.empty(); });
  ASSERT_EQ(opened.size(), 1u) << describe(opened);
  EXPECT_EQ(opened[0].kind, FileEvent::Kind::Open);
  EXPECT_EQ(opened[0].pid, child.pid());
  EXPECT_EQ(opened[0].path, nvidia0_);

  pid_t pid = child.pid();
  child.finish();
  auto closed = collect([&](const FileEventList& e) { return !e.empty(); });
  ASSERT_EQ(closed.size(), 1u) << describe(closed);
  EXPECT_EQ(closed[0].kind, FileEvent::Kind::Close);
  EXPECT_EQ(closed[0].pid, pid) << "the exiting child closed it";
  EXPECT_EQ(closed[0].path, nvidia0_);
}

TEST_F(FanotifyWatchTest, InheritedFileClosesOnceForItsLastHolder) {
  int fd = open_file(render_);
  ASSERT_GE(fd, 0);
  auto opened = collect([&](const FileEventList& e) { return !e.empty(); });
  ASSERT_EQ(opened.size(), 1u) << describe(opened);
  EXPECT_TRUE(has(opened, FileEvent::Kind::Open, ::getpid(), render_)) << describe(opened);

  Child child([] {});  // inherits fd: the same open file description
  ::close(fd);
  // fsnotify queues an event before close() returns: none now means the parent's close was
  // not the last.
  auto after_parent = watch_->read();
  EXPECT_TRUE(after_parent.events.empty()) << describe(after_parent.events);

  pid_t pid = child.pid();
  child.finish();
  auto closed = collect([&](const FileEventList& e) { return !e.empty(); });
  ASSERT_EQ(closed.size(), 1u) << describe(closed);
  EXPECT_EQ(closed[0].kind, FileEvent::Kind::Close);
  EXPECT_EQ(closed[0].pid, pid) << "the child held the last reference";
  EXPECT_EQ(closed[0].path, render_);
}

TEST_F(FanotifyWatchTest, DupedFdClosesOnce) {
  int fd = open_file(nvidia0_);
  ASSERT_GE(fd, 0);
  int dup = ::dup(fd);
  ASSERT_GE(dup, 0);
  auto opened = collect([&](const FileEventList& e) { return !e.empty(); });
  ASSERT_EQ(opened.size(), 1u) << describe(opened);
  EXPECT_TRUE(has(opened, FileEvent::Kind::Open, ::getpid(), nvidia0_));

  ::close(fd);
  auto after_first = watch_->read();
  EXPECT_TRUE(after_first.events.empty()) << describe(after_first.events);
  ::close(dup);
  auto closed = collect([&](const FileEventList& e) { return !e.empty(); });
  ASSERT_EQ(closed.size(), 1u) << describe(closed);
  EXPECT_TRUE(has(closed, FileEvent::Kind::Close, ::getpid(), nvidia0_));
}

TEST_F(FanotifyWatchTest, OpenAndCloseMergedInTheQueueComeOpenFirst) {
  ::close(open_file(render_));
  auto got = collect([&](const FileEventList& e) { return e.size() >= 2; });
  ASSERT_EQ(got.size(), 2u) << describe(got);
  EXPECT_EQ(got[0].kind, FileEvent::Kind::Open);
  EXPECT_EQ(got[1].kind, FileEvent::Kind::Close);
  for (const auto& e : got) {
    EXPECT_EQ(e.pid, ::getpid());
    EXPECT_EQ(e.path, render_);
  }
}

TEST_F(FanotifyWatchTest, UnwatchedFileInTheSameDirIsLeftOut) {
  ::close(open_file(other_));
  ::close(open_file(nvidia0_));  // a marker: once it is in, the other file's would be too
  auto got = collect(
      [&](const FileEventList& e) { return has(e, FileEvent::Kind::Close, ::getpid(), nvidia0_); });
  ASSERT_EQ(got.size(), 2u) << describe(got);
  for (const auto& e : got) EXPECT_EQ(e.path, nvidia0_) << describe(got);
}

TEST_F(FanotifyWatchTest, EveryEventFdIsClosed) {
  auto fds_open = [] {
    return std::distance(fs::directory_iterator("/proc/self/fd"), fs::directory_iterator{});
  };
  auto before = fds_open();
  for (int i = 0; i < 50; ++i) ::close(open_file(i % 2 ? nvidia0_ : other_));
  auto got = collect([](const FileEventList& e) { return e.size() >= 2; });
  EXPECT_EQ(got.size(), 2u) << describe(got);  // 25 of each merged into one record
  EXPECT_EQ(fds_open(), before);
}

long queue_limit() {
  std::ifstream in("/proc/sys/fs/fanotify/max_queued_events");
  long n = -1;
  in >> n;
  return n;
}

TEST_F(FanotifyWatchTest, BurstPastTheQueueLimitIsAnOverflow) {
  long limit = queue_limit();
  if (limit <= 0 || limit > 65536)
    GTEST_SKIP() << "fanotify queue limit " << limit << " is too large to fill quickly";
  // The kernel merges queued events of one process on one file, so a burst of one file opened
  // again and again is one event; distinct (process, file) pairs are not merged.
  constexpr int kFiles = 128;
  fs::create_directory(dir_ / "burst");
  std::vector<std::string> paths;
  for (int i = 0; i < kFiles; ++i) paths.push_back(make_file("burst/" + std::to_string(i)));
  auto burst_watch = FanotifyWatch::open(paths);
  ASSERT_TRUE(burst_watch) << burst_watch.error().text();
  long children = limit / kFiles + 8;
  for (long c = 0; c < children; ++c) {
    pid_t pid = ::fork();
    if (pid == 0) {
      for (const auto& p : paths) ::close(open_file(p));
      ::_exit(0);
    }
    ASSERT_GT(pid, 0);
    ::waitpid(pid, nullptr, 0);
  }
  bool overflow = false;
  size_t events = 0;
  for (int reads = 0; reads < 100000 && !overflow; ++reads) {
    auto batch = burst_watch->read();
    overflow = batch.overflow;
    events += batch.events.size();
    if (batch.events.empty() && !batch.overflow) break;
  }
  EXPECT_TRUE(overflow) << events << " events read from " << children * kFiles << " opens";
}

// A storm can queue events as fast as they are read: one read() hands on what it took after
// a bounded number of buffers, and the rest is there for the next call.
TEST_F(FanotifyWatchTest, OneReadTakesABoundedBatchAndLeavesTheRest) {
  long limit = queue_limit();
  constexpr int kFiles = 128, kChildren = 24;  // 3072 records: more than one batch holds
  if (limit >= 0 && limit < kFiles * kChildren + 64)
    GTEST_SKIP() << "fanotify queue limit " << limit << " is too small";
  fs::create_directory(dir_ / "many");
  std::vector<std::string> paths;
  for (int i = 0; i < kFiles; ++i) paths.push_back(make_file("many/" + std::to_string(i)));
  auto many = FanotifyWatch::open(paths);
  ASSERT_TRUE(many) << many.error().text();
  for (int c = 0; c < kChildren; ++c) {
    pid_t pid = ::fork();
    if (pid == 0) {
      for (const auto& p : paths) ::close(open_file(p));
      ::_exit(0);
    }
    ASSERT_GT(pid, 0);
    ::waitpid(pid, nullptr, 0);
  }
  auto first = many->read();
  ASSERT_FALSE(first.overflow);
  EXPECT_GT(first.events.size(), 0u);
  EXPECT_LT(first.events.size(), size_t{2} * kFiles * kChildren) << "one read took everything";
  pollfd p{many->fd(), POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 0), 1) << "the rest is still queued";
  size_t total = first.events.size();
  for (int reads = 0; reads < 1000; ++reads) {
    auto batch = many->read();
    if (batch.events.empty()) break;
    total += batch.events.size();
  }
  EXPECT_EQ(total, size_t{2} * kFiles * kChildren);  // an open and a close each, none lost
}

TEST_F(FanotifyWatchTest, MissingPathIsNamedInTheError) {
  std::string missing = (dir_ / "nvidia7").string();
  auto w = FanotifyWatch::open({nvidia0_, missing});
  ASSERT_FALSE(w);
  EXPECT_NE(w.error().message.find(missing), std::string::npos) << w.error().text();
}

TEST_F(FanotifyWatchTest, MovedFromWatchReadsNothing) {
  FanotifyWatch moved = std::move(*watch_);
  EXPECT_EQ(watch_->fd(), -1);
  EXPECT_TRUE(watch_->read().events.empty());
  ::close(open_file(nvidia0_));
  EXPECT_FALSE(moved.read().events.empty());
}

TEST(FanotifyWatch, WithoutPrivilegeOpenSaysWhatIsNeeded) {
  std::string said = testing::run_unprivileged([] {
    auto w = FanotifyWatch::open({"/dev/null"});
    return w ? std::string("opened") : w.error().text();
  });
  EXPECT_NE(said.find("CAP_SYS_ADMIN"), std::string::npos) << said;
  EXPECT_NE(said.find("run the daemon as root"), std::string::npos) << said;
}

}  // namespace
}  // namespace gpureap::track

// KernelFdIndex (src/collect/kernel_fd_index.cpp) on the running kernel: forked children hold
// stand-in GPU files of a temporary dev root; the index names exactly their GPU fds, covers a
// process with none, and covers no other process under a reused PID. Skips, saying why, where
// this machine cannot load the open-file iterator (not root, no BTF, a kernel before 5.8).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>

#include "backend/backend_set.h"
#include "collect/kernel_fd_index.h"
#include "procfs/proc_fs.h"

namespace gpureap::collect {
namespace {

namespace fs = std::filesystem;

// A child that runs `body`, writes one number to the parent and sleeps until killed.
class Child {
 public:
  explicit Child(const std::function<int()>& body) {
    int p[2];
    if (::pipe(p) != 0) throw std::runtime_error("pipe failed");
    pid_ = ::fork();
    if (pid_ == 0) {
      int value = body();
      if (::write(p[1], &value, sizeof value) != sizeof value) ::_exit(97);
      for (;;) ::pause();
    }
    ::close(p[1]);
    if (::read(p[0], &value_, sizeof value_) != sizeof value_) value_ = -1;
    ::close(p[0]);
  }
  ~Child() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  Child(const Child&) = delete;
  pid_t pid() const { return pid_; }
  int value() const { return value_; }

 private:
  pid_t pid_ = -1;
  int value_ = -1;
};

size_t open_fds() {
  return static_cast<size_t>(
      std::distance(fs::directory_iterator("/proc/self/fd"), fs::directory_iterator()));
}

TEST(KernelFdIndexTest, NamesAHoldersGpuFdsAndCoversNoReusedPid) {
  if (!kernel::OpenFileIterator::permitted()) GTEST_SKIP() << "this user may not load BPF programs";
  auto it = kernel::OpenFileIterator::load();
  if (!it) GTEST_SKIP() << "no open-file iterator here: " << it.error().text();

  std::string tmpl = (fs::temp_directory_path() / "gpureap-index-XXXXXX").string();
  ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
  const std::string dev = tmpl;
  for (const char* name : {"nvidia0", "nvidia-uvm"})
    std::ofstream(dev + "/" + name) << "stand-in\n";
  Child holder([&] {
    ::open((dev + "/nvidia-uvm").c_str(), O_RDONLY);
    ::open("/dev/null", O_RDONLY);  // an fd that is no GPU file's comes between
    return ::open((dev + "/nvidia0").c_str(), O_RDONLY);
  });
  Child path_only([&] { return ::open((dev + "/nvidia0").c_str(), O_PATH); });
  Child idle([] { return 0; });
  Child pipes_only([] {  // no fd 0, no device node, no regular file: nothing in the pass
    int p[2];
    if (::pipe(p) != 0) return -1;
    std::vector<int> others;  // all but pipes (the one to the parent among them)
    for (const auto& e : fs::directory_iterator("/proc/self/fd")) {
      std::error_code ec;
      if (fs::read_symlink(e.path(), ec).string().rfind("pipe:", 0) != 0)
        others.push_back(std::stoi(e.path().filename().string()));
    }
    for (int fd : others) ::close(fd);
    return ::fcntl(0, F_GETFD) == -1 ? 0 : -1;  // fd 0 is closed
  });
  ASSERT_GE(holder.value(), 0);
  ASSERT_GE(path_only.value(), 0);
  ASSERT_EQ(pipes_only.value(), 0);

  auto catalog =
      procfs::DeviceCatalog::enumerate(backend::BackendSet().device_nodes(), dev, "/proc");
  ASSERT_TRUE(catalog) << catalog.error().text();
  auto proc = procfs::ProcFs::open("/proc");
  ASSERT_TRUE(proc);
  auto start = [&](pid_t pid) -> uint64_t {
    auto st = proc->read_process_stat(pid);
    return st && *st ? (*st)->stat.start_ticks : 0;
  };
  const size_t fds_before = open_fds();
  auto index = KernelFdIndex::read(*it, *catalog, ::sysconf(_SC_CLK_TCK));
  ASSERT_TRUE(index) << index.error().text();
  EXPECT_EQ(open_fds(), fds_before);  // its O_PATH probes are closed again

  const auto* held = index->gpu_fds(holder.pid(), start(holder.pid()));
  ASSERT_NE(held, nullptr);
  ASSERT_EQ(held->size(), 2u);
  EXPECT_TRUE(std::count(held->begin(), held->end(), holder.value()));
  EXPECT_FALSE(std::count(held->begin(), held->end(), holder.value() - 1));  // /dev/null's
  // Covered, holding nothing: an O_PATH fd opens no file; a process with no GPU file.
  for (const Child* c : {&path_only, &idle}) {
    const auto* none = index->gpu_fds(c->pid(), start(c->pid()));
    ASSERT_NE(none, nullptr) << c->pid();
    EXPECT_TRUE(none->empty());
  }
  // Not covered, so read whole through /proc: a process the pass did not see.
  EXPECT_EQ(index->gpu_fds(pipes_only.pid(), start(pipes_only.pid())), nullptr);
  // The same PID with another start is another process: not covered.
  EXPECT_EQ(index->gpu_fds(holder.pid(), start(holder.pid()) + 1), nullptr);
  fs::remove_all(dev);
}

}  // namespace
}  // namespace gpureap::collect

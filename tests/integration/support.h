#pragma once
// Real processes, a temporary dev root of stand-in device files, and the real gpureap binary.
#include <sys/types.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace gpureap::testing {

// A temporary directory, removed with its contents at the end of the test.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A dev root with stand-in files: nvidia0, nvidia1, nvidiactl, nvidia-uvm, dri/renderD128.
class FakeDevRoot : public TempDir {
 public:
  FakeDevRoot();
  std::string dev(const std::string& name) const { return file(name); }
};

// A child process that runs `body` and then sleeps until killed. The body runs in the child;
// it may open files, fork, set its name. Killed (SIGKILL) and reaped on destruction.
class Child {
 public:
  explicit Child(std::function<void()> body);
  ~Child();
  Child(Child&& other) noexcept : pid_(other.pid_) { other.pid_ = -1; }
  Child(const Child&) = delete;
  pid_t pid() const { return pid_; }
  void kill_and_reap();

 private:
  pid_t pid_ = -1;
};

// In a child body: a pipe-based handshake so the test knows the body has finished.
class Ready {
 public:
  Ready();
  ~Ready();
  void signal();           // child side
  void wait(int ms = 10000);  // parent side; fails the test on timeout
  // Passes a number from child to parent (e.g. a grandchild's pid).
  void send(long value);
  long receive(int ms = 10000);

 private:
  int fds_[2];
};

// Opens `path` read-only and returns the fd (never closed: it is what the test holds).
int hold(const std::string& path);

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};
// Runs the gpureap binary with `args` and extra environment entries ("K=V").
RunResult run_gpureap(const std::vector<std::string>& args, const std::vector<std::string>& env = {});
nlohmann::json run_json(const std::vector<std::string>& args, const std::vector<std::string>& env = {});

// The JSON row of `pid` in a snapshot, or null.
nlohmann::json row_of(const nlohmann::json& snapshot, pid_t pid);
// Waits until /proc/<pid>/stat shows `state` (e.g. 'T', 'Z'); false on timeout.
bool wait_for_state(pid_t pid, char state, int ms = 10000);
// Waits until the pid no longer exists.
bool wait_gone(pid_t pid, int ms = 10000);

}  // namespace gpureap::testing

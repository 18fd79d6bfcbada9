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

// --- for `gpureap kill` ---------------------------------------------------------------------
// A field of /proc/<pid>/status ("SigPnd", "ShdPnd", ...) without its key, or "" when absent.
std::string proc_status_field(pid_t pid, const std::string& key);
// In a child body: block every signal that can be blocked, so a signal sent stays pending.
void block_all_signals();
// No signal pending for pid: in a child that blocks them all, proof that none was sent.
bool no_signal_pending(pid_t pid);
// In /proc and not a zombie.
bool is_alive(pid_t pid);
// Runs a copy of the gpureap binary as uid/gid with no supplementary groups (the test must
// run as root); stdout/stderr as run_gpureap.
RunResult run_gpureap_as(uid_t uid, gid_t gid, const std::vector<std::string>& args,
                         const std::vector<std::string>& env = {});
// The signal that ended our child `pid` (0: it exited), waiting for it to end. WNOWAIT leaves
// the zombie for Child's destructor to reap, so that never signals a recycled PID.
int end_signal(pid_t pid);
// SIGKILLs the listed processes that are still alive when it goes out of scope: strays a test
// made (reparented workers) never outlive it, even when an assertion failed half way.
struct KillStrays {
  std::vector<pid_t> pids;
  ~KillStrays();
};
// The element of a JSON array of objects whose "pid" is pid, or null.
nlohmann::json entry_of(const nlohmann::json& array, pid_t pid);

// --- for `gpureap run` ----------------------------------------------------------------------
// gpureap started in the background, for tests that signal it while its job runs. `prefix`
// runs it under another program (e.g. {"unshare", "--pid", "--fork", "--mount-proc"}).
class BackgroundGpureap {
 public:
  explicit BackgroundGpureap(const std::vector<std::string>& args,
                             const std::vector<std::string>& env = {},
                             const std::vector<std::string>& prefix = {});
  ~BackgroundGpureap();  // SIGKILLs and reaps it if still running
  BackgroundGpureap(const BackgroundGpureap&) = delete;
  pid_t pid() const { return pid_; }
  // Waits up to ms for it to exit; on timeout it is SIGKILLed and the test fails.
  RunResult wait(int ms = 60000);

 private:
  TempDir dir_;
  pid_t pid_ = -1;
};
// Waits until `path` exists and is not empty.
bool wait_for_file(const std::string& path, int ms = 10000);
// The whole file, or "" when it cannot be read.
std::string read_text(const std::string& path);

}  // namespace gpureap::testing

namespace gpureap::testing {

// A scenario file for the NVML test double and the environment that points gpureap at it.
class FakeNvml : public TempDir {
 public:
  explicit FakeNvml(const nlohmann::json& scenario);
  void write(const nlohmann::json& scenario);
  std::vector<std::string> env() const;
  std::string scenario_path() const { return file("scenario.json"); }
};

// A PID that existed and is gone (a child that exited and was reaped).
pid_t dead_pid();

}  // namespace gpureap::testing

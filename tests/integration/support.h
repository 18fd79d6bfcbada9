#pragma once
// Real processes, a temporary dev root of stand-in device files, and the real gpureap binary.
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
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

// A stand-in nvidia-smi that records its arguments and answers `says` with `exit_code`; put it
// first on PATH with path_env().
class FakeNvidiaSmi : public TempDir {
 public:
  explicit FakeNvidiaSmi(int exit_code = 0, const std::string& says = "GPU reset done");
  std::string path_env() const { return "PATH=" + path() + ":/usr/bin:/bin"; }
  // The arguments of its last run: empty when it never ran.
  std::string args() const;
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
  void signal();              // child side
  void wait(int ms = 30000);  // parent side; fails the test on timeout
  // Passes a number from child to parent (e.g. a grandchild's pid).
  void send(long value);
  long receive(int ms = 30000);

 private:
  int fds_[2];
};

// The process `pid` runs the program file `program` (its /proc/PID/exe).
bool runs(pid_t pid, const std::string& program);
// Opens `path` read-only and returns the fd (never closed: it is what the test holds).
int hold(const std::string& path);
// A child that holds `dev`'s file `name` (e.g. "nvidia0"), returned once it does. `first` runs
// in the child before (e.g. to rename it).
Child holding(const FakeDevRoot& dev, const std::string& name, std::function<void()> first = {});

// A child that holds `dev`'s file `device` and then runs a copy of sleep(1) installed as root's
// program `name` in a directory only root may write: a system-installed program of that name,
// as the protected list requires (the test must run as root). `block` blocks every signal
// first, so one sent stays pending.
struct SystemProgram {
  TempDir dir;
  std::unique_ptr<Child> child;
  pid_t pid() const { return child->pid(); }
};
std::unique_ptr<SystemProgram> run_system_program(const FakeDevRoot& dev, const std::string& device,
                                                  const std::string& name, bool block = false);

// Runs `init` as PID 1 of a new PID namespace with its own /proc (root only) and returns its
// exit status; kNoPidNamespace when the namespace cannot be made here.
inline constexpr int kNoPidNamespace = 77;
int run_in_new_pid_namespace(const std::function<int()>& init);

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};
// Runs the gpureap binary with `args` and extra environment entries ("K=V").
RunResult run_gpureap(const std::vector<std::string>& args,
                      const std::vector<std::string>& env = {});
nlohmann::json run_json(const std::vector<std::string>& args,
                        const std::vector<std::string>& env = {});
// Runs any program (argv[0] looked up on PATH) with exactly the environment `env`.
RunResult run_program_in(const std::vector<std::string>& argv, const std::vector<std::string>& env);
// Runs the gpureap binary with `args` under a soft and hard limit of `limit` open files (set in
// the child, by the shell's `ulimit -n`), with exactly the environment `env`.
RunResult run_gpureap_with_fd_limit(int limit, const std::vector<std::string>& args,
                                    const std::vector<std::string>& env);
// The command's stdout as JSON; a test failure (and an empty object) when it is not.
nlohmann::json parse_output(const RunResult& r);

// A library path that does not exist: the tests do not depend on the machine having a GPU.
inline const std::string kNoNvml = "/nonexistent/libnvidia-ml.so.1";
// `gpureap kill --json --dev-root DEV --nvml-library <none>` followed by `extra`.
std::vector<std::string> kill_args(const FakeDevRoot& dev, std::vector<std::string> extra);

// `gpureap kill --json --dev-root DEV` followed by `extra`, for a driver the environment names
// (FakeNvml(idle_gpus()).env(): `--gpu N` needs a driver to map N to its device file).
std::vector<std::string> gpu_kill_args(const FakeDevRoot& dev, std::vector<std::string> extra);
// A scenario for the NVML test double: two GPUs, minors 0 and 1, that answer and list nothing.
nlohmann::json idle_gpus();

// The PIDs a gpureap.kill/v1 document plans, in the plan's order (by PID).
std::vector<pid_t> planned_pids(const nlohmann::json& kill_doc);
// The PIDs in ascending order.
inline std::vector<pid_t> sorted(std::vector<pid_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// A JSON array of strings, of PIDs, as a vector (in the array's order).
inline std::vector<std::string> strings(const nlohmann::json& array) {
  return array.get<std::vector<std::string>>();
}
inline std::vector<pid_t> pids(const nlohmann::json& array) {
  return array.get<std::vector<pid_t>>();
}

// The JSON row of `pid` in a snapshot, or null.
nlohmann::json row_of(const nlohmann::json& snapshot, pid_t pid);
// A snapshot row's anomalies ("orphan", "stopped", ...).
inline std::vector<std::string> anomalies(const nlohmann::json& row) {
  return row["anomalies"].get<std::vector<std::string>>();
}
// The finding of a gpureap.doctor/v1 document with `code`, or nullptr.
inline const nlohmann::json* finding(const nlohmann::json& doctor_doc, const std::string& code) {
  for (const auto& f : doctor_doc["findings"])
    if (f["code"] == code) return &f;
  return nullptr;
}
// The state letter of /proc/<pid>/stat ('R', 'S', 'T', 'Z', ...), '\0' when it is gone.
char state_of(pid_t pid);
// Waits until /proc/<pid>/stat shows `state` (e.g. 'T', 'Z'); false on timeout.
bool wait_for_state(pid_t pid, char state, int ms = 30000);
// Waits until the pid no longer exists.
bool wait_gone(pid_t pid, int ms = 30000);
// Its parent's PID (/proc/<pid>/stat), 0 when it is gone.
pid_t parent_of(pid_t pid);
// Host PIDs of `ancestor`'s descendants that run `sleep MARKER`, by marker: a test that starts
// processes in a shell (in a container, a PID namespace) names each by its sleep's argument.
std::map<std::string, pid_t> sleepers_under(pid_t ancestor);

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
// Processes a test made that are not its children (reparented workers), each held by a pidfd
// opened when it was listed: what signals them reaches that process or none, never a process
// given its number later (a stray that ended is no longer waited for by anyone, and another
// test steering ns_last_pid hands its number out again at once).
class StrayPids {
 public:
  StrayPids() = default;
  StrayPids(std::initializer_list<pid_t> pids) { insert(end(), pids.begin(), pids.end()); }
  StrayPids(const std::vector<pid_t>& pids) { insert(end(), pids.begin(), pids.end()); }
  StrayPids& operator=(std::initializer_list<pid_t> pids);
  StrayPids(StrayPids&& other) noexcept;
  StrayPids& operator=(StrayPids&& other) noexcept;
  StrayPids(const StrayPids&) = delete;
  ~StrayPids();
  template <class It>
  void insert(std::vector<pid_t>::const_iterator, It first, It last) {
    for (; first != last; ++first) add(*first);
  }
  void push_back(pid_t pid) { add(pid); }
  // No longer a stray (its parent reaped it): forgotten, never signalled.
  void erase(std::vector<pid_t>::const_iterator at);
  std::vector<pid_t>::const_iterator begin() const { return pids_.begin(); }
  std::vector<pid_t>::const_iterator end() const { return pids_.end(); }
  pid_t operator[](size_t i) const { return pids_[i]; }
  pid_t back() const { return pids_.back(); }
  void kill_all() const;  // SIGKILLs those still running

 private:
  void add(pid_t pid);
  void close_all();
  std::vector<pid_t> pids_;
  std::vector<int> pidfds_;  // -1: it had ended (or could not be held) when listed
};
// SIGKILLs the listed processes that are still alive when it goes out of scope: strays a test
// made never outlive it, even when an assertion failed half way.
struct KillStrays {
  StrayPids pids;
  ~KillStrays() { pids.kill_all(); }
};

// A trainer that opened `dev`'s file `device` in a process group of its own, forked one worker
// (named "loader-worker") that inherits it, and exited, reaped: its PID is gone and the worker
// keeps its context. The worker is SIGKILLed with the struct.
struct GoneTrainer {
  pid_t trainer = 0;
  pid_t worker = 0;
  KillStrays strays;
};
std::unique_ptr<GoneTrainer> gone_trainer(const FakeDevRoot& dev,
                                          const std::string& device = "nvidia0");

// Runs gpureap on a pseudo-terminal (stdin, stdout and stderr), as a user at a shell does.
// Once the output contains `prompt`, types `answer` and a newline. out holds the whole
// terminal transcript; err stays empty.
// `columns`: the terminal's width (0: a terminal that reports no size).
RunResult run_gpureap_on_tty(const std::vector<std::string>& args, const std::string& prompt,
                             const std::string& answer, const std::vector<std::string>& env = {},
                             unsigned short columns = 0);
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
// The report `gpureap run --report DIR/report.json` wrote in `dir`; a test failure (and an empty
// object) when it is not JSON.
nlohmann::json report_of(const TempDir& dir);
// Waits until `path` exists and is not empty.
bool wait_for_file(const std::string& path, int ms = 30000);
// The whole file, or "" when it cannot be read.
std::string read_text(const std::string& path);
// The lines of a text, without their "\n" (nor a terminal's "\r" before it).
inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    out.push_back(line);
  }
  return out;
}
// Whether `text` is UTF-8 as RFC 3629 defines it (no overlong form, no surrogate, nothing above
// U+10FFFF): what Prometheus and JSON parsers accept. Written here, apart from gpureap's code.
bool strictly_utf8(const std::string& text);
// The columns a terminal gives a line: the C library's wcwidth() in the C.UTF-8 locale, as
// terminals and tmux measure (an invalid byte takes one column, a control none).
size_t terminal_columns(const std::string& line);
// A JSON Lines file (the audit log, what an exec alert sink wrote): one document per
// non-empty line ended by its newline (a last line still being written is left out); a line
// that is not JSON is a discarded value.
std::vector<nlohmann::json> read_json_lines(const std::string& path);

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
// Rewrites the scenario for a long-running gpureap, which must see every change whole: writes
// beside the file, then renames over it.
void replace_scenario(const FakeNvml& nvml, const nlohmann::json& scenario);

// A PID that existed and is gone (a child that exited and was reaped).
pid_t dead_pid();
// When `pid` started, in microseconds since boot (the clock of /dev/kmsg's records).
uint64_t started_usec(pid_t pid);
// Now on that clock (CLOCK_BOOTTIME): a process started once it reads past a time starts after.
uint64_t boot_usec_now();

}  // namespace gpureap::testing

// --- for `gpureap daemon` -------------------------------------------------------------------
namespace gpureap::testing {

// Polls `done` every 20 ms until it is true or `ms` have passed. The waits here have generous
// deadlines (a loaded CI machine, a sanitizer build): a deadline costs time only when the test
// fails anyway. A test never asserts how soon something happens.
bool wait_until(const std::function<bool()>& done, int ms = 15000);

struct HttpResponse {
  int status = 0;  // 0: no answer (connection refused, timeout)
  std::string headers;
  std::string body;
  std::string header(const std::string& name) const;  // case-insensitive; "" when absent
};
// One HTTP/1.1 request on its own connection ("Connection: close"); `headers` are "Name: value".
HttpResponse http_request(int port, const std::string& method, const std::string& path,
                          const std::vector<std::string>& headers = {}, int timeout_ms = 10000);
inline HttpResponse http_get(int port, const std::string& path,
                             const std::vector<std::string>& headers = {}) {
  return http_request(port, "GET", path, headers);
}

// A Unix socket served by the test itself, as a daemon of another gpureap version would serve
// it: each connection's request line is kept, and `answer` of it is sent back.
class ScriptedSocket {
 public:
  ScriptedSocket(std::string path, std::function<std::string(const std::string&)> answer);
  ~ScriptedSocket();  // stops serving
  ScriptedSocket(const ScriptedSocket&) = delete;
  std::vector<std::string> requests() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// `gpureap daemon --listen 127.0.0.1:0 ARGS...` in the background; the constructor waits until
// it logs the port it got and has taken its first sample (or has exited). stderr (the log) goes to
// a file the test can read at any time.
class DaemonProcess {
 public:
  DaemonProcess(const std::vector<std::string>& args, const std::vector<std::string>& env = {},
                bool listen_on_free_port = true);
  ~DaemonProcess();  // SIGKILLs and reaps it if still running
  DaemonProcess(const DaemonProcess&) = delete;
  pid_t pid() const { return pid_; }
  int port() const { return port_; }  // 0 when it never said where it listens
  std::string log() const;
  // Waits until the log has a line containing `text`.
  bool wait_log(const std::string& text, int ms = 15000) const;
  HttpResponse get(const std::string& path, const std::vector<std::string>& headers = {}) const {
    return http_get(port_, path, headers);
  }
  // The value of the first /metrics sample line starting with `series` (e.g.
  // `gpureap_up ` or `gpureap_gpu_memory_used_bytes{gpu="0"`), or empty.
  std::optional<double> metric(const std::string& series) const;
  void signal(int sig) const;
  // Exit code (128+N when killed by signal N); -1 and a test failure when still running after ms.
  int wait_exit(int ms = 30000);

 private:
  TempDir dir_;
  pid_t pid_ = -1;
  int port_ = 0;
  std::optional<int> early_exit_;
};

// The daemon's latest sample (/api/v1/snapshot), or null when it does not answer.
nlohmann::json snapshot_of(const DaemonProcess& d);
// Waits until the daemon has published `n` samples that began after the call (each has its
// own timestamp; the one being taken may have begun before): the progress to wait on before
// saying that something did not happen while the daemon sampled, or that it happened to every
// sample since. A loaded machine samples slowly, so the deadline is a minute.
bool wait_new_samples(const DaemonProcess& d, int n);

}  // namespace gpureap::testing

// --- for `gpureap top` and `gpureap ps --watch` on a terminal (tmux) -----------------------
namespace gpureap::testing {

// tmux is installed: the terminal tests skip without it.
bool have_tmux();

// gpureap on a terminal: a detached session of a private tmux server, width x height. When
// gpureap exits, the pane prints "gpureap exited N" on the restored screen and stays. `prefix`
// runs it under another program (e.g. setpriv, to run it as another user).
class TmuxGpureap {
 public:
  TmuxGpureap(const std::vector<std::string>& args, const std::vector<std::string>& env = {},
              int width = 120, int height = 40, const std::vector<std::string>& prefix = {});
  ~TmuxGpureap();  // kills the tmux server and everything in it
  TmuxGpureap(const TmuxGpureap&) = delete;

  // tmux key names: "Enter", "Escape", "Down", "C-c", "q", "/", "Space" ...
  void keys(const std::vector<std::string>& names) const;
  // Literal text (send-keys -l).
  void type(const std::string& text) const;
  // The visible screen; with `escapes`, with its colours as SGR sequences (capture-pane -e).
  std::string screen(bool escapes = false) const;
  // Polls the screen until `done` holds; on timeout fails the test and shows the screen.
  std::string wait_until(const std::function<bool(const std::string&)>& done,
                         const std::string& what, int ms = 20000, bool escapes = false) const;
  std::string wait_for(const std::string& text, int ms = 20000) const;
  // gpureap's exit code, waiting up to ms for it to exit; -1 when it did not.
  int exit_code(int ms = 15000) const;
  // A tmux format value for the pane (display-message -p), e.g. "#{history_size}".
  std::string value(const std::string& format) const;
  // Resizes the terminal, as a user dragging its window does.
  void resize(int width, int height) const;

 private:
  std::vector<std::string> base() const;
  TempDir dir_;
};

// The lines of a screen that are table rows of pid: their first word (after a tag mark) is it.
std::vector<std::string> rows_of(const std::string& screen, pid_t pid);
// An SGR sequence sets this foreground colour (e.g. 31, red) somewhere in the text.
bool has_sgr_color(const std::string& text, int color);

}  // namespace gpureap::testing

namespace gpureap::testing {

inline constexpr uint64_t GiB = 1ull << 30;

// The PCI address the AMD tests give their stand-in AMD GPU (DrmMachine::amd_gpu).
inline const std::string kAmd = "0000:03:00.0";

// This machine's host name (the `instance` an alert names).
inline std::string host_name() {
  char buf[256] = {};
  ::gethostname(buf, sizeof buf - 1);
  return buf;
}

// What a daemon logs once its local socket serves the commands; its path follows.
inline const std::string kServingLocalSocket = "serving `gpureap ps`, `doctor` and `top` on ";

}  // namespace gpureap::testing

// Skips a test that needs the NVML test double when the build has none.
#ifndef FAKE_NVML_LIBRARY
#define REQUIRE_DOUBLE() GTEST_SKIP() << "the NVML test double was not built"
#else
#define REQUIRE_DOUBLE() (void)0
#endif

// Skips a terminal test (gpureap on tmux, with the NVML test double) where it cannot run.
#ifndef FAKE_NVML_LIBRARY
#define REQUIRE_TERMINAL() GTEST_SKIP() << "the NVML test double was not built"
#else
#define REQUIRE_TERMINAL()                                   \
  if (!have_tmux()) GTEST_SKIP() << "tmux is not installed"; \
  (void)0
#endif

namespace gpureap::testing {

// Whether uid 65534 (nobody) can execute the gpureap binary: not where the build lives under
// a directory only root may enter (a clone in /root, a 0700 temporary directory).
bool binary_runnable_as_nobody();

// A TCP port on the loopback address nobody listens on now (a job's rendezvous, a receiver).
int free_port();

// A child that runs `body` at PID `want` (as root, through ns_last_pid), or -1 when other
// processes kept taking the number first. Other attempts exit at once.
pid_t fork_at(pid_t want, const std::function<void()>& body);

// In a child: a mount namespace of its own (a user namespace too where it is not root), in
// which `device` is bind-mounted over `cover` (a plain file of another name). False when the
// namespace cannot be made here.
bool cover_device_in_own_namespace(const std::string& device, const std::string& cover);

}  // namespace gpureap::testing

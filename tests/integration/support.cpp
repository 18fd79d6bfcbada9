#include "support.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <locale.h>
#include <netinet/in.h>
#include <poll.h>
#include <pty.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cwchar>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

extern char** environ;

namespace gpureap::testing {

namespace {
// Every gpureap the tests start inherits this: no `ps` asks a daemon that happens to run on
// the test machine, and no test daemon binds the system's socket. A test that wants the local
// socket names one (the `local_socket` key, GPUREAP_DAEMON_SOCKET in a client's env).
[[maybe_unused]] const bool kNoDaemonSocket = ::setenv("GPUREAP_DAEMON_SOCKET", "", 1) == 0;
}  // namespace

TempDir::TempDir() {
  std::string tmpl = std::filesystem::temp_directory_path().string() + "/gpureap-test-XXXXXX";
  char* p = ::mkdtemp(tmpl.data());
  if (!p) throw std::runtime_error("mkdtemp failed");
  path_ = p;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

FakeNvidiaSmi::FakeNvidiaSmi(int exit_code, const std::string& says) {
  std::ofstream(file("nvidia-smi")) << "#!/bin/sh\necho \"$@\" > " << file("args") << "\necho '"
                                    << says << "'\nexit " << exit_code << "\n";
  ::chmod(file("nvidia-smi").c_str(), 0755);
}

std::string FakeNvidiaSmi::args() const {
  std::ifstream f(file("args"));
  std::string s;
  std::getline(f, s);
  return s;
}

FakeDevRoot::FakeDevRoot() {
  std::filesystem::create_directories(file("dri"));
  for (const char* name : {"nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm", "dri/renderD128"})
    std::ofstream(file(name)) << "stand-in\n";
}

Child::Child(std::function<void()> body) {
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    ::signal(SIGTERM, SIG_DFL);
    body();
    for (;;) ::pause();
  }
}

Child::~Child() {
  kill_and_reap();
}

void Child::kill_and_reap() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

Ready::Ready() {
  if (::pipe(fds_) != 0) throw std::runtime_error("pipe failed");
}

Ready::~Ready() {
  ::close(fds_[0]);
  ::close(fds_[1]);
}

void Ready::signal() {
  send(0);
}

void Ready::send(long value) {
  if (::write(fds_[1], &value, sizeof value) != sizeof value) ::_exit(99);
}

void Ready::wait(int ms) {
  receive(ms);
}

long Ready::receive(int ms) {
  pollfd p{fds_[0], POLLIN, 0};
  if (::poll(&p, 1, ms) != 1) {
    ADD_FAILURE() << "child did not get ready in time";
    return -1;
  }
  long value = -1;
  if (::read(fds_[0], &value, sizeof value) != sizeof value)
    ADD_FAILURE() << "short read from child";
  return value;
}

bool runs(pid_t pid, const std::string& program) {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec);
  return !ec && exe.string() == program;
}

int hold(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) ::_exit(98);
  return fd;
}

Child holding(const FakeDevRoot& dev, const std::string& name, std::function<void()> first) {
  Ready ready;
  Child child([&] {
    if (first) first();
    hold(dev.dev(name));
    ready.signal();
  });
  ready.wait();
  return child;
}

std::unique_ptr<GoneTrainer> gone_trainer(const FakeDevRoot& dev, const std::string& device) {
  auto g = std::make_unique<GoneTrainer>();
  Ready ready;
  Child t([&] {
    ::setpgid(0, 0);
    hold(dev.dev(device));
    if (::fork() == 0) {
      ::prctl(PR_SET_NAME, "loader-worker");
      ready.send(::getpid());
      for (;;) ::pause();
    }
    ::_exit(0);
  });
  g->trainer = t.pid();
  g->worker = static_cast<pid_t>(ready.receive());
  g->strays.pids = {g->worker};
  t.kill_and_reap();
  return g;
}

int run_in_new_pid_namespace(const std::function<int()>& init) {
  pid_t outer = ::fork();
  if (outer == 0) {
    if (::unshare(CLONE_NEWPID | CLONE_NEWNS) != 0) ::_exit(kNoPidNamespace);
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) ::_exit(kNoPidNamespace);
    pid_t first = ::fork();
    if (first == 0) {
      if (::mount("proc", "/proc", "proc", 0, nullptr) != 0) ::_exit(kNoPidNamespace);
      ::_exit(init());
    }
    int status = 0;
    ::waitpid(first, &status, 0);
    ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  }
  int status = 0;
  ::waitpid(outer, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::unique_ptr<SystemProgram> run_system_program(const FakeDevRoot& dev, const std::string& device,
                                                  const std::string& name, bool block) {
  auto p = std::make_unique<SystemProgram>();
  std::string program = p->dir.file(name);
  std::filesystem::copy_file("/bin/sleep", program);
  ::chmod(program.c_str(), 0755);
  ::chmod(p->dir.path().c_str(), 0755);
  Ready ready;
  p->child = std::make_unique<Child>([&] {
    if (block) block_all_signals();
    hold(dev.dev(device));
    ready.signal();
    ::execl(program.c_str(), program.c_str(), "infinity", nullptr);
    ::_exit(97);
  });
  ready.wait();
  // Until the exec has happened, the process still runs the test binary.
  std::string exe = "/proc/" + std::to_string(p->pid()) + "/exe";
  std::error_code error;
  if (!wait_until([&] { return std::filesystem::read_symlink(exe, error).string() == program; }))
    ADD_FAILURE() << "PID " << p->pid() << " did not run " << program;
  return p;
}

namespace {

// argv and envp for exec: `env` entries replace inherited ones of the same name. The char*
// vectors point into the strings, so the struct must outlive the exec call.
struct ExecVectors {
  std::vector<std::string> argv_s, env_s;
  std::vector<char*> argv, envp;
};

ExecVectors exec_vectors(std::vector<std::string> argv_s, const std::vector<std::string>& env) {
  ExecVectors x;
  x.argv_s = std::move(argv_s);
  x.env_s = env;
  // gpureap draws its tables in ASCII under a locale that is not UTF-8: the tests read the
  // UTF-8 tables whatever the machine's locale, unless a test sets its own.
  if (std::none_of(env.begin(), env.end(),
                   [](const std::string& v) { return v.rfind("LC_ALL=", 0) == 0; }))
    x.env_s.push_back("LC_ALL=C.UTF-8");
  for (char** e = environ; *e; ++e) {
    std::string entry(*e);
    std::string name = entry.substr(0, entry.find('=') + 1);
    bool overridden = std::any_of(x.env_s.begin(), x.env_s.end(),
                                  [&](const std::string& v) { return v.rfind(name, 0) == 0; });
    if (!overridden) x.env_s.push_back(entry);
  }
  for (auto& a : x.argv_s) x.argv.push_back(a.data());
  x.argv.push_back(nullptr);
  for (auto& e : x.env_s) x.envp.push_back(e.data());
  x.envp.push_back(nullptr);
  return x;
}

}  // namespace

namespace {

// Runs argv with envp, stdin from /dev/null; stdout and stderr go to files, so no pipe can
// fill up and block the child. `search_path`: argv[0] is looked up on PATH.
RunResult spawn_and_wait(char* const argv[], char* const envp[], bool search_path) {
  TempDir dir;
  std::string out_path = dir.file("out"), err_path = dir.file("err");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  pid_t pid = -1;
  RunResult r;
  int rc = search_path ? ::posix_spawnp(&pid, argv[0], &fa, nullptr, argv, envp)
                       : ::posix_spawn(&pid, argv[0], &fa, nullptr, argv, envp);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    ADD_FAILURE() << "cannot start " << argv[0] << ": " << std::strerror(rc);
    return r;
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_text(out_path);
  r.err = read_text(err_path);
  return r;
}

}  // namespace

RunResult run_gpureap(const std::vector<std::string>& args, const std::vector<std::string>& env) {
  std::vector<std::string> argv_s{GPUREAP_BINARY};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  ExecVectors exec = exec_vectors(std::move(argv_s), env);
  return spawn_and_wait(exec.argv.data(), exec.envp.data(), false);
}

RunResult run_gpureap_with_fd_limit(int limit, const std::vector<std::string>& args,
                                    const std::vector<std::string>& env) {
  std::vector<std::string> argv = {"/bin/sh", "-c", "ulimit -n \"$0\" && exec \"$@\"",
                                   std::to_string(limit), GPUREAP_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_program_in(argv, env);
}

RunResult run_program_in(const std::vector<std::string>& argv,
                         const std::vector<std::string>& env) {
  std::vector<std::string> argv_s = argv, env_s = env;
  std::vector<char*> args, envp;
  for (auto& a : argv_s) args.push_back(a.data());
  args.push_back(nullptr);
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);
  return spawn_and_wait(args.data(), envp.data(), true);
}

nlohmann::json parse_output(const RunResult& r) {
  try {
    return nlohmann::json::parse(r.out);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not JSON: " << e.what() << "\nstdout: " << r.out << "\nstderr: " << r.err;
    return nlohmann::json::object();
  }
}

nlohmann::json run_json(const std::vector<std::string>& args, const std::vector<std::string>& env) {
  auto r = run_gpureap(args, env);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return parse_output(r);
}

std::vector<std::string> kill_args(const FakeDevRoot& dev, std::vector<std::string> extra) {
  std::vector<std::string> a{"kill", "--json", "--dev-root", dev.path(), "--nvml-library", kNoNvml};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

std::vector<std::string> gpu_kill_args(const FakeDevRoot& dev, std::vector<std::string> extra) {
  std::vector<std::string> a{"kill", "--json", "--dev-root", dev.path()};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

nlohmann::json idle_gpus() {
  nlohmann::json gpus = nlohmann::json::array();
  for (int minor : {0, 1})
    gpus.push_back({{"name", "NVIDIA H200"},
                    {"uuid", "GPU-idle-" + std::to_string(minor)},
                    {"minor", minor},
                    {"total_bytes", 80ull << 30},
                    {"processes", nlohmann::json::array()}});
  return {{"gpus", gpus}};
}

std::vector<pid_t> planned_pids(const nlohmann::json& kill_doc) {
  std::vector<pid_t> out;
  for (const auto& t : kill_doc["plan"]["targets"]) out.push_back(t["pid"].get<pid_t>());
  return out;
}

nlohmann::json row_of(const nlohmann::json& snapshot, pid_t pid) {
  if (!snapshot.contains("processes")) return nullptr;
  for (const auto& p : snapshot["processes"])
    if (p["pid"] == pid) return p;
  return nullptr;
}

namespace {

// /proc/<pid>/stat after the command's closing parenthesis ("S 1 42 42 ..."), or "".
std::string stat_after_comm(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto close = s.rfind(')');
  return close == std::string::npos || close + 2 >= s.size() ? "" : s.substr(close + 2);
}

template <class F>
bool poll_until(F done, int ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return done();
}

}  // namespace

char state_of(pid_t pid) {
  std::string rest = stat_after_comm(pid);
  return rest.empty() ? '\0' : rest[0];
}

bool wait_for_state(pid_t pid, char state, int ms) {
  return poll_until([&] { return state_of(pid) == state; }, ms);
}

bool wait_gone(pid_t pid, int ms) {
  return poll_until([&] { return ::kill(pid, 0) != 0 && errno == ESRCH; }, ms);
}

pid_t parent_of(pid_t pid) {
  std::istringstream rest(stat_after_comm(pid));
  char state = 0;
  pid_t ppid = 0;
  rest >> state >> ppid;
  return ppid;
}

std::map<std::string, pid_t> sleepers_under(pid_t ancestor) {
  std::map<std::string, pid_t> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = std::stoi(name);
    bool under = false;
    for (pid_t p = parent_of(pid); p > 1 && !under; p = parent_of(p)) under = p == ancestor;
    std::ifstream in("/proc/" + name + "/cmdline");
    std::vector<std::string> argv;
    for (std::string arg; std::getline(in, arg, '\0');) argv.push_back(arg);
    if (under && argv.size() == 2 && argv[0] == "sleep") out[argv[1]] = pid;
  }
  return out;
}

// --- for `gpureap kill` ---------------------------------------------------------------------

std::string proc_status_field(pid_t pid, const std::string& key) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(f, line);) {
    if (line.rfind(key + ":", 0) != 0) continue;
    auto value = line.substr(key.size() + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    return value;
  }
  return "";
}

void block_all_signals() {
  sigset_t all;
  sigfillset(&all);
  sigprocmask(SIG_BLOCK, &all, nullptr);
}

bool no_signal_pending(pid_t pid) {
  std::string own = proc_status_field(pid, "SigPnd"), shared = proc_status_field(pid, "ShdPnd");
  if (own.empty() || shared.empty()) {
    ADD_FAILURE() << "cannot read the pending signals of " << pid;
    return false;
  }
  return std::stoull(own, nullptr, 16) == 0 && std::stoull(shared, nullptr, 16) == 0;
}

bool is_alive(pid_t pid) {
  char s = state_of(pid);
  return s != '\0' && s != 'Z' && s != 'X';
}

RunResult run_gpureap_as(uid_t uid, gid_t gid, const std::vector<std::string>& args,
                         const std::vector<std::string>& env) {
  RunResult r;
  // The build tree may not be readable by that user: run a copy from a directory it can read.
  TempDir dir;
  ::chmod(dir.path().c_str(), 0755);
  std::string binary = dir.file("gpureap");
  std::filesystem::copy_file(GPUREAP_BINARY, binary);
  ::chmod(binary.c_str(), 0755);
  std::string out_path = dir.file("out"), err_path = dir.file("err");
  int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  std::vector<std::string> argv_s{binary};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  ExecVectors exec = exec_vectors(std::move(argv_s), env);
  auto& argv = exec.argv;
  auto& envp = exec.envp;
  pid_t pid = ::fork();
  if (pid == 0) {
    int in = ::open("/dev/null", O_RDONLY);
    if (in < 0 || ::dup2(in, 0) < 0 || ::dup2(out, 1) < 0 || ::dup2(err, 2) < 0) ::_exit(120);
    if (::setgroups(0, nullptr) != 0 || ::setgid(gid) != 0 || ::setuid(uid) != 0) ::_exit(121);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(122);
  }
  ::close(out);
  ::close(err);
  int status = 0;
  ::waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_text(out_path);
  r.err = read_text(err_path);
  return r;
}

int end_signal(pid_t pid) {
  siginfo_t info{};
  if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) != 0) {
    ADD_FAILURE() << "waitid " << pid << ": " << std::strerror(errno);
    return -1;
  }
  return info.si_code == CLD_KILLED || info.si_code == CLD_DUMPED ? info.si_status : 0;
}

StrayPids& StrayPids::operator=(std::initializer_list<pid_t> pids) {
  close_all();
  insert(end(), pids.begin(), pids.end());
  return *this;
}

StrayPids::StrayPids(StrayPids&& other) noexcept
    : pids_(std::move(other.pids_)), pidfds_(std::move(other.pidfds_)) {
  other.pids_.clear();
  other.pidfds_.clear();
}

StrayPids& StrayPids::operator=(StrayPids&& other) noexcept {
  if (this != &other) {
    close_all();
    pids_ = std::move(other.pids_);
    pidfds_ = std::move(other.pidfds_);
    other.pids_.clear();
    other.pidfds_.clear();
  }
  return *this;
}

StrayPids::~StrayPids() {
  close_all();
}

void StrayPids::add(pid_t pid) {
  pids_.push_back(pid);
  pidfds_.push_back(pid > 0 ? static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)) : -1);
}

void StrayPids::erase(std::vector<pid_t>::const_iterator at) {
  const auto i = at - pids_.begin();
  if (pidfds_[i] >= 0) ::close(pidfds_[i]);
  pids_.erase(at);
  pidfds_.erase(pidfds_.begin() + i);
}

void StrayPids::kill_all() const {
  for (int fd : pidfds_)
    if (fd >= 0) ::syscall(SYS_pidfd_send_signal, fd, SIGKILL, nullptr, 0);
}

void StrayPids::close_all() {
  for (int fd : pidfds_)
    if (fd >= 0) ::close(fd);
  pids_.clear();
  pidfds_.clear();
}

RunResult run_gpureap_on_tty(const std::vector<std::string>& args, const std::string& prompt,
                             const std::string& answer, const std::vector<std::string>& env,
                             unsigned short columns) {
  RunResult r;
  std::vector<std::string> argv_s{GPUREAP_BINARY};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_s;
  for (char** e = environ; *e; ++e) env_s.emplace_back(*e);
  env_s.insert(env_s.end(), env.begin(), env.end());
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);
  int master = -1, slave = -1;
  winsize size{};
  size.ws_row = 24;
  size.ws_col = columns;
  if (::openpty(&master, &slave, nullptr, nullptr, columns ? &size : nullptr) != 0) {
    ADD_FAILURE() << "openpty: " << std::strerror(errno);
    return r;
  }
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(master);
    ::setsid();
    ::ioctl(slave, TIOCSCTTY, 0);
    for (int fd = 0; fd < 3; ++fd) ::dup2(slave, fd);
    if (slave > 2) ::close(slave);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(122);
  }
  ::close(slave);
  bool answered = false;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{master, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) {
      ADD_FAILURE() << "gpureap on a terminal did not finish; transcript:\n" << r.out;
      ::kill(pid, SIGKILL);
      break;
    }
    char buf[4096];
    ssize_t n = ::read(master, buf, sizeof buf);
    if (n <= 0) break;  // EIO: the terminal's last user is gone
    r.out.append(buf, static_cast<size_t>(n));
    if (!answered && r.out.find(prompt) != std::string::npos) {
      std::string line = answer + "\n";
      if (::write(master, line.data(), line.size()) != static_cast<ssize_t>(line.size()))
        ADD_FAILURE() << "cannot type on the terminal";
      answered = true;
    }
  }
  ::close(master);
  int status = 0;
  ::waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (!answered) ADD_FAILURE() << "no prompt \"" << prompt << "\" on the terminal:\n" << r.out;
  return r;
}

nlohmann::json entry_of(const nlohmann::json& array, pid_t pid) {
  if (!array.is_array()) return nullptr;
  for (const auto& e : array)
    if (e.contains("pid") && e["pid"] == pid) return e;
  return nullptr;
}

// --- for `gpureap run` ----------------------------------------------------------------------

BackgroundGpureap::BackgroundGpureap(const std::vector<std::string>& args,
                                     const std::vector<std::string>& env,
                                     const std::vector<std::string>& prefix) {
  std::vector<std::string> argv_s = prefix;
  argv_s.push_back(GPUREAP_BINARY);
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  ExecVectors exec = exec_vectors(std::move(argv_s), env);
  auto& argv = exec.argv;
  auto& envp = exec.envp;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, dir_.file("out").c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  posix_spawn_file_actions_addopen(&fa, 2, dir_.file("err").c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  int rc = ::posix_spawnp(&pid_, argv[0], &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    pid_ = -1;
    ADD_FAILURE() << "cannot start " << argv[0] << ": " << std::strerror(rc);
  }
}

BackgroundGpureap::~BackgroundGpureap() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
}

RunResult BackgroundGpureap::wait(int ms) {
  RunResult r;
  if (pid_ <= 0) return r;
  int status = 0;
  bool done = poll_until([&] { return ::waitpid(pid_, &status, WNOHANG) == pid_; }, ms);
  if (!done) {
    ADD_FAILURE() << "gpureap did not exit within " << ms << " ms";
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, &status, 0);
  }
  pid_ = -1;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_text(dir_.file("out"));
  r.err = read_text(dir_.file("err"));
  return r;
}

bool wait_for_file(const std::string& path, int ms) {
  return poll_until(
      [&] {
        struct stat st {};
        return ::stat(path.c_str(), &st) == 0 && st.st_size > 0;
      },
      ms);
}

nlohmann::json report_of(const TempDir& dir) {
  try {
    return nlohmann::json::parse(read_text(dir.file("report.json")));
  } catch (const std::exception& e) {
    ADD_FAILURE() << "no JSON report: " << e.what();
    return nlohmann::json::object();
  }
}

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

bool strictly_utf8(const std::string& text) {
  for (size_t i = 0; i < text.size();) {
    auto byte = [&](size_t k) { return static_cast<unsigned char>(text[i + k]); };
    const unsigned char c = byte(0);
    size_t n = c < 0x80                 ? 1
               : c >= 0xC2 && c <= 0xDF ? 2
               : c >= 0xE0 && c <= 0xEF ? 3
               : c >= 0xF0 && c <= 0xF4 ? 4
                                        : 0;
    if (n == 0 || i + n > text.size()) return false;
    for (size_t k = 1; k < n; ++k)
      if ((byte(k) & 0xC0) != 0x80) return false;
    // The second byte's range where the first allows less than any continuation byte.
    if ((c == 0xE0 && byte(1) < 0xA0) || (c == 0xED && byte(1) > 0x9F) ||
        (c == 0xF0 && byte(1) < 0x90) || (c == 0xF4 && byte(1) > 0x8F))
      return false;
    i += n;
  }
  return true;
}

size_t terminal_columns(const std::string& line) {
  static const locale_t utf8 = ::newlocale(LC_CTYPE_MASK, "C.UTF-8", locale_t(0));
  EXPECT_NE(utf8, locale_t(0)) << "no C.UTF-8 locale";
  if (utf8 == locale_t(0)) return 0;
  const locale_t was = ::uselocale(utf8);
  size_t columns = 0;
  std::mbstate_t state{};
  for (size_t i = 0; i < line.size();) {
    wchar_t wc = 0;
    size_t n = std::mbrtowc(&wc, line.data() + i, line.size() - i, &state);
    if (n == static_cast<size_t>(-1) || n == static_cast<size_t>(-2) || n == 0) {
      state = {};
      ++columns;
      ++i;
      continue;
    }
    int w = ::wcwidth(wc);
    columns += w > 0 ? static_cast<size_t>(w) : 0;
    i += n;
  }
  ::uselocale(was);
  return columns;
}

std::vector<nlohmann::json> read_json_lines(const std::string& path) {
  std::vector<nlohmann::json> out;
  const std::string text = read_text(path);
  // A last line without its newline is still being written (a daemon appends while a test
  // waits on the file): it is no record yet.
  for (size_t at = 0, end; (end = text.find('\n', at)) != std::string::npos; at = end + 1)
    if (end > at) out.push_back(nlohmann::json::parse(text.substr(at, end - at), nullptr, false));
  return out;
}

}  // namespace gpureap::testing

namespace gpureap::testing {

FakeNvml::FakeNvml(const nlohmann::json& scenario) {
  write(scenario);
}

void FakeNvml::write(const nlohmann::json& scenario) {
  std::ofstream(scenario_path()) << scenario.dump(2);
}

void replace_scenario(const FakeNvml& nvml, const nlohmann::json& scenario) {
  std::string tmp = nvml.scenario_path() + ".tmp";
  std::ofstream(tmp) << scenario.dump(2);
  ASSERT_EQ(std::rename(tmp.c_str(), nvml.scenario_path().c_str()), 0);
}

std::vector<std::string> FakeNvml::env() const {
#ifdef FAKE_NVML_LIBRARY
  return {std::string("GPUREAP_NVML_LIBRARY=") + FAKE_NVML_LIBRARY,
          "FAKE_NVML_SCENARIO=" + scenario_path()};
#else
  return {"GPUREAP_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1"};
#endif
}

pid_t dead_pid() {
  pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  ::waitpid(pid, nullptr, 0);
  return pid;
}

uint64_t started_usec(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(f)), {});
  std::istringstream after(stat.substr(stat.rfind(')') + 2));
  std::string field;
  for (int i = 3; i <= 22 && after >> field; ++i) {
  }
  return std::stoull(field) * 1'000'000 / static_cast<uint64_t>(::sysconf(_SC_CLK_TCK));
}

uint64_t boot_usec_now() {
  timespec t{};
  ::clock_gettime(CLOCK_BOOTTIME, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1'000'000 + static_cast<uint64_t>(t.tv_nsec) / 1000;
}

}  // namespace gpureap::testing

// --- for `gpureap daemon` -------------------------------------------------------------------
namespace gpureap::testing {

bool wait_until(const std::function<bool()>& done, int ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  for (;;) {
    if (done()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::string HttpResponse::header(const std::string& name) const {
  std::string lower_headers = headers, lower_name = name + ":";
  for (auto& c : lower_headers) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (auto& c : lower_name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  size_t at = lower_headers.find("\r\n" + lower_name);
  if (at == std::string::npos) return "";
  size_t begin = at + 2 + lower_name.size();
  size_t end = headers.find("\r\n", begin);
  std::string value = headers.substr(begin, end - begin);
  while (!value.empty() && value.front() == ' ') value.erase(0, 1);
  return value;
}

HttpResponse http_request(int port, const std::string& method, const std::string& path,
                          const std::vector<std::string>& headers, int timeout_ms) {
  HttpResponse r;
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return r;
  timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return r;
  }
  std::string request =
      method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
  for (const auto& h : headers) request += h + "\r\n";
  request += "\r\n";
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    ::close(fd);
    return r;
  }
  std::string raw;
  char buf[65536];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    raw.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  size_t head_end = raw.find("\r\n\r\n");
  if (raw.rfind("HTTP/1.", 0) != 0 || head_end == std::string::npos) return r;
  r.status = std::atoi(raw.c_str() + raw.find(' ') + 1);
  r.headers = raw.substr(0, head_end + 2);
  r.body = raw.substr(head_end + 4);
  // The server closes after the response ("Connection: close"), so the body is what follows;
  // a chunked body is not expected from it.
  return r;
}

DaemonProcess::DaemonProcess(const std::vector<std::string>& args,
                             const std::vector<std::string>& env, bool listen_on_free_port) {
  std::vector<std::string> argv_s{GPUREAP_BINARY, "daemon"};
  if (listen_on_free_port) argv_s.insert(argv_s.end(), {"--listen", "127.0.0.1:0"});
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_s = env;
  // The log file stands for the journal, as systemd connects a service's stderr to it: it names
  // the stream in JOURNAL_STREAM, so the lines carry their syslog priority ("<6>"). A test that
  // passes its own JOURNAL_STREAM sees the daemon as on any other stream.
  const std::string err_path = dir_.file("err");
  bool own_journal = std::any_of(env.begin(), env.end(), [](const std::string& x) {
    return x.rfind("JOURNAL_STREAM=", 0) == 0;
  });
  if (!own_journal) {
    int fd = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    struct stat st {};
    if (fd >= 0 && ::fstat(fd, &st) == 0)
      env_s.push_back("JOURNAL_STREAM=" + std::to_string(st.st_dev) + ":" +
                      std::to_string(st.st_ino));
    if (fd >= 0) ::close(fd);
  }
  for (char** e = environ; *e; ++e) {
    std::string entry(*e);
    std::string name = entry.substr(0, entry.find('=') + 1);
    bool overridden = std::any_of(env_s.begin(), env_s.end(),
                                  [&](const std::string& x) { return x.rfind(name, 0) == 0; });
    if (!overridden && name != "NOTIFY_SOCKET=" && name != "WATCHDOG_USEC=") env_s.push_back(entry);
  }
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, dir_.file("out").c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  // O_TRUNC keeps the inode JOURNAL_STREAM names.
  posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  int rc = ::posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    pid_ = -1;
    ADD_FAILURE() << "cannot start " << argv[0] << ": " << std::strerror(rc);
    return;
  }
  // "listening on http://127.0.0.1:PORT/": the port the kernel gave it.
  const std::string marker = "listening on http://127.0.0.1:";
  int status = 0;
  wait_until(
      [&] {
        std::string text = read_text(dir_.file("err"));
        size_t at = text.find(marker);
        if (at != std::string::npos) port_ = std::atoi(text.c_str() + at + marker.size());
        if (port_ > 0) return true;
        if (::waitpid(pid_, &status, WNOHANG) != pid_) return false;
        pid_ = -1;  // it exited before listening: wait_exit() gives its code, log() says why
        early_exit_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        return true;
      },
      20000);
  if (port_ == 0 && !early_exit_)
    ADD_FAILURE() << "the daemon did not start listening; its log:\n" << log();
  // It listens before its first sample, and answers 503 until that is taken.
  if (port_ > 0 && !wait_until([&] { return get("/healthz").status == 200; }, 20000))
    ADD_FAILURE() << "the daemon did not take its first sample; its log:\n" << log();
}

DaemonProcess::~DaemonProcess() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
}

std::string DaemonProcess::log() const {
  return read_text(dir_.file("err"));
}

bool DaemonProcess::wait_log(const std::string& text, int ms) const {
  return wait_until([&] { return log().find(text) != std::string::npos; }, ms);
}

std::optional<double> DaemonProcess::metric(const std::string& series) const {
  auto r = get("/metrics");
  if (r.status != 200) return std::nullopt;
  size_t at = 0;
  while ((at = r.body.find(series, at)) != std::string::npos) {
    if (at == 0 || r.body[at - 1] == '\n') {
      size_t end = r.body.find('\n', at);
      std::string line = r.body.substr(at, end - at);
      return std::strtod(line.c_str() + line.rfind(' ') + 1, nullptr);
    }
    ++at;
  }
  return std::nullopt;
}

void DaemonProcess::signal(int sig) const {
  if (pid_ > 0) ::kill(pid_, sig);
}

int DaemonProcess::wait_exit(int ms) {
  if (early_exit_) return *early_exit_;
  if (pid_ <= 0) return -1;
  int status = 0;
  if (!wait_until([&] { return ::waitpid(pid_, &status, WNOHANG) == pid_; }, ms)) {
    ADD_FAILURE() << "the daemon did not exit within " << ms << " ms; its log:\n" << log();
    return -1;
  }
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

nlohmann::json snapshot_of(const DaemonProcess& d) {
  auto r = d.get("/api/v1/snapshot");
  return r.status == 200 ? nlohmann::json::parse(r.body, nullptr, false) : nlohmann::json();
}

bool wait_new_samples(const DaemonProcess& d, int n) {
  std::set<std::string> seen;
  const std::string now = snapshot_of(d).value("timestamp", "");
  return wait_until(
      [&] {
        const std::string t = snapshot_of(d).value("timestamp", "");
        if (t != now && !t.empty()) seen.insert(t);
        return static_cast<int>(seen.size()) > n;
      },
      60000);
}

}  // namespace gpureap::testing

// --- for `gpureap top` and `gpureap ps --watch` on a terminal (tmux) -----------------------
namespace gpureap::testing {
namespace {

struct Captured {
  int code = -1;
  std::string out;
};

// Runs argv (found on PATH), stdout to a file; stdin and stderr from/to /dev/null.
Captured run_tool(const std::vector<std::string>& args) {
  Captured c;
  TempDir dir;
  std::vector<std::string> argv_s = args;
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, dir.file("out").c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  int rc = ::posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return c;
  int status = 0;
  ::waitpid(pid, &status, 0);
  c.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  c.out = read_text(dir.file("out"));
  return c;
}

}  // namespace

bool have_tmux() {
  return run_tool({"tmux", "-V"}).code == 0;
}

std::vector<std::string> TmuxGpureap::base() const {
  // A private server (its own socket), no user configuration, UTF-8.
  return {"tmux", "-u", "-S", dir_.file("tmux.sock"), "-f", "/dev/null"};
}

TmuxGpureap::TmuxGpureap(const std::vector<std::string>& args, const std::vector<std::string>& env,
                         int width, int height, const std::vector<std::string>& prefix) {
  auto cmd = base();
  for (const char* a : {"new-session", "-d", "-s", "gpureap", "-x"}) cmd.push_back(a);
  cmd.push_back(std::to_string(width));
  cmd.push_back("-y");
  cmd.push_back(std::to_string(height));
  cmd.push_back("--");
  cmd.push_back("/bin/sh");
  cmd.push_back("-c");
  // The shell survives Ctrl-C (a trap, which its child does not inherit) to report the exit.
  cmd.push_back("trap : INT; env \"$@\"; echo \"gpureap exited $?\"; exec sleep 3600");
  cmd.push_back("sh");
  cmd.push_back("TERM=screen");
  cmd.push_back("LC_ALL=C.UTF-8");
  for (const auto& e : env) cmd.push_back(e);
  for (const auto& p : prefix) cmd.push_back(p);
  cmd.push_back(GPUREAP_BINARY);
  for (const auto& a : args) cmd.push_back(a);
  auto r = run_tool(cmd);
  if (r.code != 0) ADD_FAILURE() << "tmux new-session failed (" << r.code << ")";
}

TmuxGpureap::~TmuxGpureap() {
  auto cmd = base();
  cmd.push_back("kill-server");
  run_tool(cmd);
}

void TmuxGpureap::keys(const std::vector<std::string>& names) const {
  auto cmd = base();
  for (const char* a : {"send-keys", "-t", "gpureap"}) cmd.push_back(a);
  for (const auto& n : names) cmd.push_back(n);
  run_tool(cmd);
}

void TmuxGpureap::type(const std::string& text) const {
  auto cmd = base();
  for (const char* a : {"send-keys", "-t", "gpureap", "-l"}) cmd.push_back(a);
  cmd.push_back(text);
  run_tool(cmd);
}

std::string TmuxGpureap::screen(bool escapes) const {
  auto cmd = base();
  for (const char* a : {"capture-pane", "-p", "-t", "gpureap"}) cmd.push_back(a);
  if (escapes) cmd.push_back("-e");
  return run_tool(cmd).out;
}

std::string TmuxGpureap::wait_until(const std::function<bool(const std::string&)>& done,
                                    const std::string& what, int ms, bool escapes) const {
  std::string last;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  // A screen is returned only once it is settled: the same on two captures in a row. A frame
  // caught while gpureap is drawing it may show a dialog's border before its text.
  std::string previous;
  do {
    last = screen(escapes);
    if (last == previous && done(last)) return last;
    previous = last;
    if (done(last)) continue;  // capture again at once to see whether it is settled
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  } while (std::chrono::steady_clock::now() < deadline);
  if (done(last)) return last;  // a screen that never stops changing, e.g. a spinner
  ADD_FAILURE() << "timed out waiting for " << what << "; the screen:\n" << last;
  return last;
}

std::string TmuxGpureap::wait_for(const std::string& text, int ms) const {
  return wait_until([&](const std::string& s) { return s.find(text) != std::string::npos; },
                    "\"" + text + "\"", ms);
}

int TmuxGpureap::exit_code(int ms) const {
  const std::string tag = "gpureap exited ";
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  do {
    std::string s = screen();
    if (auto at = s.find(tag); at != std::string::npos)
      return std::atoi(s.c_str() + at + tag.size());
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  } while (std::chrono::steady_clock::now() < deadline);
  return -1;
}

std::string TmuxGpureap::value(const std::string& format) const {
  auto cmd = base();
  for (const char* a : {"display-message", "-p", "-t", "gpureap"}) cmd.push_back(a);
  cmd.push_back(format);
  std::string out = run_tool(cmd).out;
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

void TmuxGpureap::resize(int width, int height) const {
  auto cmd = base();
  for (const char* a : {"resize-window", "-t", "gpureap", "-x"}) cmd.push_back(a);
  cmd.push_back(std::to_string(width));
  cmd.push_back("-y");
  cmd.push_back(std::to_string(height));
  if (run_tool(cmd).code != 0) ADD_FAILURE() << "tmux resize-window failed";
}

std::vector<std::string> rows_of(const std::string& screen, pid_t pid) {
  std::vector<std::string> rows;
  size_t pos = 0;
  while (pos < screen.size()) {
    size_t eol = screen.find('\n', pos);
    if (eol == std::string::npos) eol = screen.size();
    std::string line = screen.substr(pos, eol - pos);
    pos = eol + 1;
    // Colours aside, a row starts with an optional tag mark, then the PID.
    std::string plain;
    for (size_t i = 0; i < line.size(); ++i) {
      if (line[i] == '\x1b') {
        while (i < line.size() && !(line[i] >= 0x40 && line[i] <= 0x7E && line[i] != '[')) ++i;
        continue;
      }
      plain += line[i];
    }
    size_t a = plain.find_first_not_of(" *");
    if (a == std::string::npos) continue;
    size_t b = plain.find(' ', a);
    if (plain.substr(a, b == std::string::npos ? std::string::npos : b - a) == std::to_string(pid))
      rows.push_back(line);
  }
  return rows;
}

bool has_sgr_color(const std::string& text, int color) {
  for (size_t at = text.find("\x1b["); at != std::string::npos; at = text.find("\x1b[", at + 1)) {
    size_t end = text.find('m', at);
    if (end == std::string::npos) break;
    std::string params = text.substr(at + 2, end - at - 2);
    size_t p = 0;
    while (p <= params.size()) {
      size_t q = params.find(';', p);
      if (q == std::string::npos) q = params.size();
      std::string n = params.substr(p, q - p);
      if (n == "38" || n == "48") break;  // extended colours: not a basic foreground
      if (n == std::to_string(color)) return true;
      p = q + 1;
    }
  }
  return false;
}

}  // namespace gpureap::testing

namespace gpureap::testing {

bool binary_runnable_as_nobody() {
  pid_t pid = ::fork();
  if (pid == 0) {
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(2);
    ::_exit(::access(GPUREAP_BINARY, X_OK) == 0 ? 0 : 1);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

pid_t fork_at(pid_t want, const std::function<void()>& body) {
  // ns_last_pid is the whole machine's (in the host's PID namespace): two tests steering it at
  // once (ctest -j) take each other's numbers, so the tests of every process take turns.
  const int lock =
      ::open("/tmp/gpureap-tests-ns_last_pid.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock >= 0) ::flock(lock, LOCK_EX);
  struct Unlock {
    int fd;
    ~Unlock() {
      if (fd >= 0) ::close(fd);
    }
  } unlock{lock};
  for (int attempt = 0; attempt < 200; ++attempt) {
    std::ofstream("/proc/sys/kernel/ns_last_pid") << want - 1;
    pid_t pid = ::fork();
    if (pid == 0) {
      if (::getpid() != want) ::_exit(0);
      if (lock >= 0) ::close(lock);  // the turn ends with the parent's, not with this child
      body();
      ::_exit(0);
    }
    if (pid == want) return pid;
    if (pid > 0) ::waitpid(pid, nullptr, 0);
  }
  return -1;
}

bool cover_device_in_own_namespace(const std::string& device, const std::string& cover) {
  if (::unshare(CLONE_NEWNS) != 0) {
    uid_t uid = ::geteuid();
    gid_t gid = ::getegid();
    if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) return false;
    std::ofstream("/proc/self/setgroups") << "deny";
    std::ofstream("/proc/self/uid_map") << "0 " << uid << " 1";
    std::ofstream("/proc/self/gid_map") << "0 " << gid << " 1";
  }
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return false;
  return ::mount(device.c_str(), cover.c_str(), nullptr, MS_BIND, nullptr) == 0;
}

}  // namespace gpureap::testing

namespace gpureap::testing {

struct ScriptedSocket::State {
  std::function<std::string(const std::string&)> answer;
  int fd = -1;
  std::atomic<bool> stop{false};
  std::thread thread;
  mutable std::mutex mu;
  std::vector<std::string> requests;

  void serve() {
    while (!stop) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      int c = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      std::string line;
      char buf[4096];
      while (line.find('\n') == std::string::npos) {
        ssize_t n = ::recv(c, buf, sizeof buf, 0);
        if (n <= 0) break;
        line.append(buf, static_cast<size_t>(n));
      }
      {
        std::lock_guard lock(mu);
        requests.push_back(line);
      }
      const std::string text = answer(line);
      (void)!::send(c, text.data(), text.size(), MSG_NOSIGNAL);
      ::close(c);
    }
  }
};

ScriptedSocket::ScriptedSocket(std::string path,
                               std::function<std::string(const std::string&)> answer)
    : state_(std::make_unique<State>()) {
  state_->answer = std::move(answer);
  state_->fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
  EXPECT_EQ(::bind(state_->fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  EXPECT_EQ(::listen(state_->fd, 8), 0);
  state_->thread = std::thread([s = state_.get()] { s->serve(); });
}

ScriptedSocket::~ScriptedSocket() {
  state_->stop = true;
  state_->thread.join();
  ::close(state_->fd);
}

std::vector<std::string> ScriptedSocket::requests() const {
  std::lock_guard lock(state_->mu);
  return state_->requests;
}

}  // namespace gpureap::testing

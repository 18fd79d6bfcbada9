#include "support.h"

#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

extern char** environ;

namespace gpureap::testing {

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

Child::~Child() { kill_and_reap(); }

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

void Ready::signal() { send(0); }

void Ready::send(long value) {
  if (::write(fds_[1], &value, sizeof value) != sizeof value) ::_exit(99);
}

void Ready::wait(int ms) { receive(ms); }

long Ready::receive(int ms) {
  pollfd p{fds_[0], POLLIN, 0};
  if (::poll(&p, 1, ms) != 1) {
    ADD_FAILURE() << "child did not get ready in time";
    return -1;
  }
  long value = -1;
  if (::read(fds_[0], &value, sizeof value) != sizeof value) ADD_FAILURE() << "short read from child";
  return value;
}

int hold(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) ::_exit(98);
  return fd;
}

namespace {

std::string drain(int fd) {
  std::string out;
  char buf[65536];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

}  // namespace

RunResult run_gpureap(const std::vector<std::string>& args, const std::vector<std::string>& env) {
  std::vector<std::string> argv_s{GPUREAP_BINARY};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  // The given entries replace inherited ones of the same name.
  std::vector<std::string> env_s = env;
  for (char** e = environ; *e; ++e) {
    std::string entry(*e);
    std::string name = entry.substr(0, entry.find('=') + 1);
    bool overridden = std::any_of(env.begin(), env.end(), [&](const std::string& x) { return x.rfind(name, 0) == 0; });
    if (!overridden) env_s.push_back(entry);
  }
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);

  // stdout and stderr go to files: no pipe can fill up and block the child.
  TempDir dir;
  std::string out_path = dir.file("out"), err_path = dir.file("err");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  pid_t pid = -1;
  RunResult r;
  int rc = ::posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    ADD_FAILURE() << "cannot start " << argv[0] << ": " << std::strerror(rc);
    return r;
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  int fo = ::open(out_path.c_str(), O_RDONLY), fe = ::open(err_path.c_str(), O_RDONLY);
  r.out = drain(fo);
  r.err = drain(fe);
  ::close(fo);
  ::close(fe);
  return r;
}

nlohmann::json run_json(const std::vector<std::string>& args, const std::vector<std::string>& env) {
  auto r = run_gpureap(args, env);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  try {
    return nlohmann::json::parse(r.out);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not JSON: " << e.what() << "\n" << r.out << "\n" << r.err;
    return nlohmann::json::object();
  }
}

nlohmann::json row_of(const nlohmann::json& snapshot, pid_t pid) {
  if (!snapshot.contains("processes")) return nullptr;
  for (const auto& p : snapshot["processes"])
    if (p["pid"] == pid) return p;
  return nullptr;
}

namespace {

char state_of(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto close = s.rfind(')');
  return close == std::string::npos || close + 2 >= s.size() ? '\0' : s[close + 2];
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

bool wait_for_state(pid_t pid, char state, int ms) {
  return poll_until([&] { return state_of(pid) == state; }, ms);
}

bool wait_gone(pid_t pid, int ms) {
  return poll_until([&] { return ::kill(pid, 0) != 0 && errno == ESRCH; }, ms);
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
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  // The given entries replace inherited ones of the same name.
  std::vector<std::string> env_s = env;
  for (char** e = environ; *e; ++e) {
    std::string entry(*e);
    std::string name = entry.substr(0, entry.find('=') + 1);
    bool overridden = std::any_of(env.begin(), env.end(), [&](const std::string& x) { return x.rfind(name, 0) == 0; });
    if (!overridden) env_s.push_back(entry);
  }
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);
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
  int fo = ::open(out_path.c_str(), O_RDONLY), fe = ::open(err_path.c_str(), O_RDONLY);
  r.out = drain(fo);
  r.err = drain(fe);
  ::close(fo);
  ::close(fe);
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

KillStrays::~KillStrays() {
  for (pid_t pid : pids)
    if (pid > 0 && is_alive(pid)) ::kill(pid, SIGKILL);
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
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  // The given entries replace inherited ones of the same name.
  std::vector<std::string> env_s = env;
  for (char** e = environ; *e; ++e) {
    std::string entry(*e);
    std::string name = entry.substr(0, entry.find('=') + 1);
    bool overridden = std::any_of(env.begin(), env.end(), [&](const std::string& x) { return x.rfind(name, 0) == 0; });
    if (!overridden) env_s.push_back(entry);
  }
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, dir_.file("out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, 2, dir_.file("err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
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
  return poll_until([&] {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && st.st_size > 0;
  }, ms);
}

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

}  // namespace gpureap::testing

namespace gpureap::testing {

FakeNvml::FakeNvml(const nlohmann::json& scenario) { write(scenario); }

void FakeNvml::write(const nlohmann::json& scenario) {
  std::ofstream(scenario_path()) << scenario.dump(2);
}

std::vector<std::string> FakeNvml::env() const {
#ifdef FAKE_NVML_LIBRARY
  return {std::string("GPUREAP_NVML_LIBRARY=") + FAKE_NVML_LIBRARY, "FAKE_NVML_SCENARIO=" + scenario_path()};
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

}  // namespace gpureap::testing

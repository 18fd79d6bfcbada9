#pragma once
// Real PyTorch jobs for the integration tests: Debian's python3-torch (CPU), started as the
// test's children, their output read line by line, and the stand-in device files their ranks
// open. The tests skip where PyTorch is missing (scripts/install-deps.sh --pytorch installs it).
#include <poll.h>
#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support.h"

namespace gpureap::testing {

inline const std::string kPython = "/usr/bin/python3";  // Debian's, where python3-torch is

// Empty when PyTorch can be imported here; else why not.
inline std::string why_no_pytorch() {
  auto r = run_program_in({kPython, "-c", "import torch"}, {"PATH=/usr/bin:/bin"});
  if (r.exit_code == 0) return "";
  return "PyTorch is not installed (bash scripts/install-deps.sh --pytorch): " + r.err;
}

inline std::string pytorch_script(const std::string& name) {
  return std::string(GPUREAP_PYTORCH_SCRIPTS) + "/" + name;
}

// A Python program started as our child, its stdout on a pipe we read line by line.
class PythonJob {
 public:
  // `first` runs in the child before the exec (e.g. to enter a mount namespace).
  PythonJob(const std::vector<std::string>& args, std::function<void()> first = {}) {
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
    child_ = std::make_unique<Child>([&] {
      ::setpgid(0, 0);
      if (first) first();
      ::dup2(fds[1], 1);
      ::close(fds[0]);
      std::vector<char*> argv{const_cast<char*>(kPython.c_str())};
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execv(kPython.c_str(), argv.data());
      ::_exit(127);
    });
    ::close(fds[1]);
    out_ = fds[0];
  }
  ~PythonJob() { ::close(out_); }
  pid_t pid() const { return child_->pid(); }
  Child& child() { return *child_; }
  // The words after `first` on the next line that starts with it; empty on timeout or exit.
  // Importing torch takes seconds on a loaded machine: the wait is long.
  std::vector<long> numbers_after(const std::string& first, int ms = 120000) {
    for (;;) {
      auto nl = buffer_.find('\n');
      if (nl != std::string::npos) {
        std::istringstream line(buffer_.substr(0, nl));
        buffer_.erase(0, nl + 1);
        std::string word;
        line >> word;
        if (word != first) continue;
        std::vector<long> out;
        for (long n; line >> n;) out.push_back(n);
        return out;
      }
      pollfd p{out_, POLLIN, 0};
      if (::poll(&p, 1, ms) <= 0) return {};
      char buf[512];
      ssize_t n = ::read(out_, buf, sizeof buf);
      if (n <= 0) return {};
      buffer_.append(buf, static_cast<size_t>(n));
    }
  }

 private:
  std::unique_ptr<Child> child_;
  int out_ = -1;
  std::string buffer_;
};

inline nlohmann::json nvml_gpu(int minor, nlohmann::json processes) {
  return {{"name", "NVIDIA H200"},
          {"uuid", "GPU-000" + std::to_string(minor)},
          {"minor", minor},
          {"total_bytes", 80 * GiB},
          {"processes", std::move(processes)}};
}

// GPUs 0 to count-1, each listing the rank of its number with `bytes`: a job's ranks, one per GPU.
// rank_launcher.py's command line for four gloo_rank.py ranks on a free port, each holding the
// file `per_rank` names with its LOCAL_RANK for "{}"; rank `loading` (-1: none) sleeps as if it
// loaded a checkpoint. `flags` are the launcher's own (--helper-status N).
inline std::vector<std::string> rank_launcher_args(const std::string& per_rank, int loading,
                                                   const std::vector<std::string>& flags = {}) {
  std::vector<std::string> args{pytorch_script("rank_launcher.py")};
  args.insert(args.end(), flags.begin(), flags.end());
  args.insert(args.end(), {"4", std::to_string(free_port()), kPython,
                           pytorch_script("gloo_rank.py"), per_rank});
  if (loading >= 0) args.push_back(std::to_string(loading));
  return args;
}

inline std::vector<nlohmann::json> rank_per_gpu(const std::vector<pid_t>& ranks, int count,
                                                uint64_t bytes) {
  std::vector<nlohmann::json> gpus;
  for (int i = 0; i < count; ++i)
    gpus.push_back(
        nvml_gpu(i, {{{"pid", ranks.at(static_cast<size_t>(i))}, {"used_bytes", bytes}}}));
  return gpus;
}

// torchrun as it works under Debian's Python 3.11 (its default output options fail there).
inline std::vector<std::string> torchrun(int ranks, int max_restarts, int port) {
  return {"-m",
          "torch.distributed.run",
          "--redirects",
          "2",
          "--tee",
          "2",
          "--nproc_per_node=" + std::to_string(ranks),
          "--max_restarts=" + std::to_string(max_restarts),
          "--master_port=" + std::to_string(port)};
}

// Reads `first` lines until `count` PIDs came (one per line, the number after `first`).
inline std::vector<pid_t> pids_after(PythonJob& job, const std::string& first, size_t count) {
  std::vector<pid_t> out;
  while (out.size() < count) {
    auto n = job.numbers_after(first, 240000);
    if (n.empty()) break;
    out.push_back(static_cast<pid_t>(n.back()));
  }
  return sorted(out);
}

// Whether `pid` holds the file `pattern` names for local rank `n` ("{}" replaced).
inline bool holds_file(pid_t pid, const std::string& pattern, size_t n) {
  std::string path = pattern;
  path.replace(path.find("{}"), 2, std::to_string(n));
  std::error_code ec;
  const std::string fds = "/proc/" + std::to_string(pid) + "/fd";
  for (const auto& e : std::filesystem::directory_iterator(fds, ec))
    if (std::filesystem::read_symlink(e.path(), ec) == path) return true;
  return false;
}

// The four ranks `job`'s rank launcher printed (its "ranks" line), added to `strays` at once, then
// waited for until each holds its file (`per_rank`, "{}" its local rank). Empty, with a test
// failure, where the launcher did not start them all or a rank did not open its file.
inline std::vector<pid_t> ranks_holding(PythonJob& job, KillStrays& strays,
                                        const std::string& per_rank) {
  auto launched = job.numbers_after("ranks");
  std::vector<pid_t> ranks(launched.begin(), launched.end());
  strays.pids.insert(strays.pids.end(), ranks.begin(), ranks.end());
  if (ranks.size() != 4) {
    ADD_FAILURE() << "the launcher did not start its 4 ranks";
    return {};
  }
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (!wait_until([&] { return holds_file(ranks[i], per_rank, i); }, 120000)) {
      ADD_FAILURE() << "rank " << i << " did not open its GPU";
      return {};
    }
  }
  return ranks;
}

// The live ranks a daemon counts for the job of `launcher` (gpureap_job_ranks), or -1.
inline double live_ranks(const DaemonProcess& d, pid_t launcher) {
  const std::string body = d.get("/metrics").body;
  const std::string series = "gpureap_job_ranks{launcher_pid=\"" + std::to_string(launcher) + "\"";
  for (size_t at = body.find(series); at != std::string::npos; at = body.find(series, at + 1)) {
    const size_t end = body.find('\n', at);
    const std::string line = body.substr(at, end - at);
    if (line.find("state=\"live\"}") != std::string::npos)
      return std::stod(line.substr(line.rfind(' ') + 1));
  }
  return -1;
}

// A daemon watching a job's GPUs (`gpus`, answered by the NVML test double) under `dev_root`: a
// sample and a holder scan every 200 ms, its audit log and config in a folder of its own, and the
// config lines `policies`. Members in the order they start.
struct JobDaemon {
  JobDaemon(std::vector<nlohmann::json> gpus, const std::string& dev_root,
            const std::string& policies)
      : nvml(nlohmann::json{{"gpus", std::move(gpus)}}),
        daemon({"--config", write_config(cfg, policies), "--dev-root", dev_root}, nvml.env()) {}

  // It started, and within 30 s counts `ranks` live ranks for the job of `launcher`.
  ::testing::AssertionResult counts_live_ranks(pid_t launcher, int ranks) const {
    if (daemon.port() <= 0) return ::testing::AssertionFailure() << daemon.log();
    if (!wait_until([&] { return live_ranks(daemon, launcher) == ranks; }, 30000))
      return ::testing::AssertionFailure() << daemon.get("/metrics").body;
    return ::testing::AssertionSuccess();
  }

  FakeNvml nvml;
  TempDir cfg;
  DaemonProcess daemon;

 private:
  static std::string write_config(const TempDir& cfg, const std::string& policies) {
    std::ofstream(cfg.file("config.toml"))
        << "interval = \"200ms\"\nholder_scan_interval = \"200ms\"\n"
        << "audit_log = \"" << cfg.file("audit.jsonl") << "\"\n"
        << policies;
    return cfg.file("config.toml");
  }
};

// PIDs at the start of a kill plan's lines, as doctor --fix prints the plan.
inline std::set<pid_t> plan_rows(const std::string& text) {
  std::set<pid_t> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    size_t i = line.find_first_not_of(' ');
    if (i == std::string::npos || !std::isdigit(static_cast<unsigned char>(line[i]))) continue;
    size_t end = line.find_first_not_of("0123456789", i);
    if (end != std::string::npos && line[end] == ' ')
      out.insert(static_cast<pid_t>(std::stol(line.substr(i, end - i))));
  }
  return out;
}

// The PID of the process that holds `path` open, 0 when none does (one scan of /proc).
inline pid_t holder_of(const std::string& path) {
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code ec;
    for (const auto& fd : std::filesystem::directory_iterator(entry.path() / "fd", ec))
      if (std::filesystem::read_symlink(fd.path(), ec) == path) return std::stoi(name);
  }
  return 0;
}

}  // namespace gpureap::testing

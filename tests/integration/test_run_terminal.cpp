// `gpureap run` on an interactive terminal (a pseudo-terminal here, with gpureap as its
// session leader, as a login shell's job would be): the job gets the foreground, so Ctrl-C
// and Ctrl-Z reach it; when Ctrl-Z stops the job gpureap stops too, and `fg` (SIGCONT)
// resumes both with the job back in the foreground.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "support.h"

namespace gpureap::testing {
namespace {

class PtySession {
 public:
  // background: the session leader stays in the foreground (a shell) and runs gpureap in a
  // process group of its own, as `gpureap run ... &` would be.
  explicit PtySession(const std::vector<std::string>& args, bool background = false) {
    master_ = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (master_ < 0 || ::grantpt(master_) != 0 || ::unlockpt(master_) != 0) {
      ADD_FAILURE() << "no pseudo-terminal";
      return;
    }
    std::string slave = ::ptsname(master_);
    std::vector<std::string> argv_s{GPUREAP_BINARY};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setsid();
      int s = ::open(slave.c_str(), O_RDWR);
      if (s < 0 || ::ioctl(s, TIOCSCTTY, 0) != 0) ::_exit(120);
      termios t{};
      ::tcgetattr(s, &t);
      t.c_lflag |= ISIG;
      t.c_cc[VINTR] = 0x03;
      t.c_cc[VSUSP] = 0x1a;
      ::tcsetattr(s, TCSANOW, &t);
      ::dup2(s, 0);
      ::dup2(s, 1);
      ::dup2(s, 2);
      if (s > 2) ::close(s);
      if (background) {
        pid_t job = ::fork();
        if (job == 0) {
          ::setpgid(0, 0);
          ::execv(argv[0], argv.data());
          ::_exit(121);
        }
        int status = 0;
        ::waitpid(job, &status, 0);
        ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
      }
      ::execv(argv[0], argv.data());
      ::_exit(121);
    }
  }
  ~PtySession() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (master_ >= 0) ::close(master_);
  }

  pid_t pid() const { return pid_; }
  pid_t foreground() const { return ::tcgetpgrp(master_); }
  const std::string& output() const { return output_; }
  void type(const std::string& keys) {
    ASSERT_EQ(::write(master_, keys.data(), keys.size()), static_cast<ssize_t>(keys.size()));
  }

  // Polls `done` while reading the terminal's output, so gpureap never blocks writing.
  template <class F>
  bool until(F done, int ms = 30000) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (std::chrono::steady_clock::now() < deadline) {
      drain();
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    drain();
    return done();
  }

  // The next stop or exit of gpureap; -1 on timeout.
  int wait_status(int ms = 30000) {
    int status = -1;
    bool got = until([&] { return ::waitpid(pid_, &status, WNOHANG | WUNTRACED) == pid_; }, ms);
    if (got && !WIFSTOPPED(status)) pid_ = -1;
    return got ? status : -1;
  }

 private:
  void drain() {
    char buf[4096];
    pollfd p{master_, POLLIN, 0};
    while (::poll(&p, 1, 0) == 1 && (p.revents & POLLIN)) {
      ssize_t n = ::read(master_, buf, sizeof buf);
      if (n <= 0) break;
      output_.append(buf, static_cast<size_t>(n));
    }
  }

  int master_ = -1;
  pid_t pid_ = -1;
  std::string output_;
};

TEST(RunTerminal, CtrlZStopsJobAndGpureapFgResumesCtrlCEnds) {
  TempDir dir;
  std::string ready = dir.file("ready");
  PtySession s({"--nvml-library", dir.file("none"), "run", "--", "sh", "-c",
                "echo $$ > " + ready + "; exec sleep 1000"});
  ASSERT_GT(s.pid(), 0);
  ASSERT_TRUE(s.until([&] { return wait_for_file(ready, 0); })) << s.output();
  pid_t job = static_cast<pid_t>(std::stol(read_text(ready)));
  KillStrays strays{{job}};
  ASSERT_TRUE(s.until([&] { return s.foreground() == job; }))
      << "the job's group never became the foreground group: " << s.foreground();

  s.type("\x1a");  // Ctrl-Z
  ASSERT_TRUE(s.until([&] { return state_of(job) == 'T'; })) << "Ctrl-Z did not stop the job";
  int status = s.wait_status();
  ASSERT_NE(status, -1) << "gpureap did not stop with its job";
  ASSERT_TRUE(WIFSTOPPED(status)) << "gpureap exited: " << status << "\n" << s.output();
  EXPECT_EQ(s.foreground(), s.pid()) << "gpureap did not take the terminal back";

  ASSERT_EQ(::kill(s.pid(), SIGCONT), 0);  // what `fg` does, after giving gpureap the terminal
  EXPECT_TRUE(s.until([&] { return s.foreground() == job && state_of(job) != 'T'; }))
      << "the job was not resumed in the foreground: fg " << s.foreground() << ", state "
      << state_of(job);

  s.type("\x03");  // Ctrl-C
  status = s.wait_status();
  ASSERT_NE(status, -1) << "gpureap did not end after Ctrl-C\n" << s.output();
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGINT) << s.output();
  EXPECT_NE(s.output().find("was killed by SIGINT"), std::string::npos) << s.output();
}

TEST(RunTerminal, GpureapInTheBackgroundLeavesTheForegroundAlone) {
  TempDir dir;
  std::string ready = dir.file("ready");
  PtySession s({"--nvml-library", dir.file("none"), "run", "--report", dir.file("report.json"),
                "--", "sh", "-c", "echo $$ > " + ready + "; exec sleep 1000"},
               /*background=*/true);
  ASSERT_GT(s.pid(), 0);
  ASSERT_TRUE(s.until([&] { return wait_for_file(ready, 0); })) << s.output();
  pid_t job = static_cast<pid_t>(std::stol(read_text(ready)));
  KillStrays strays{{job}};
  EXPECT_EQ(s.foreground(), s.pid()) << "gpureap took the terminal from the shell";
  ASSERT_EQ(::kill(job, SIGTERM), 0);
  int status = s.wait_status();
  ASSERT_TRUE(status != -1 && WIFEXITED(status)) << s.output();
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM) << s.output();
  auto report = nlohmann::json::parse(read_text(dir.file("report.json")));
  EXPECT_EQ(report["interactive"], false);
}

}  // namespace
}  // namespace gpureap::testing

// doctor --fix acts on the processes it diagnosed, not on whatever has their PIDs by the time
// it signals. In a PID namespace of its own (so a PID can be reused on purpose through
// ns_last_pid), doctor is held between its diagnosis and its signals by a full stderr pipe;
// meanwhile the orphaned holder it diagnosed exits and an unrelated process takes its PID.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

#include "support.h"

namespace gpureap::testing {
namespace {

enum Code { kUntouched = 0, kSignalled = 1, kNoReuse = 78, kNotHeld = 79 };

std::string read_first_line(const std::string& path) {
  std::ifstream f(path);
  std::string s;
  std::getline(f, s);
  return s;
}

bool wait_for(const std::function<bool()>& done, int ms) {
  for (int waited = 0; waited < ms; waited += 10) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

// Runs as PID 1 of the new namespace, with its own /proc.
int fix_identity_init(const std::string& dev_root, FakeNvml& nvml) {
  // A trainer forks a worker that inherits its GPU file and exits: the driver still lists the
  // trainer's context, which the worker (its group) keeps, and doctor --fix ends the worker.
  int held[2];
  if (::pipe(held) != 0) return kNotHeld;
  pid_t trainer = ::fork();
  if (trainer == 0) {
    ::setpgid(0, 0);
    hold(dev_root + "/nvidia0");
    if (::fork() == 0) {
      pid_t me = ::getpid();
      (void)!::write(held[1], &me, sizeof me);
      for (;;) ::pause();
    }
    ::_exit(0);
  }
  // Left a zombie (WNOWAIT): in this PID namespace a listed PID absent from /proc would be the
  // host's; a zombie of this namespace is the gone trainer, whose group the worker is in.
  siginfo_t ended{};
  ::waitid(P_PID, static_cast<id_t>(trainer), &ended, WEXITED | WNOWAIT);
  pid_t holder = 0;
  if (::read(held[0], &holder, sizeof holder) != sizeof holder) return kNotHeld;
  nvml.write({{"gpus",
               {{{"uuid", "GPU-0000"},
                 {"minor", 0},
                 {"processes", {{{"pid", trainer}, {"used_bytes", GiB}, {"leaked", true}}}}}}}});
  for (const auto& e : nvml.env()) ::putenv(::strdup(e.c_str()));
  // A pipe already full: doctor's first write to stderr, right after its diagnosis, blocks.
  int p[2];
  if (::pipe(p) != 0) return kNotHeld;
  ::fcntl(p[1], F_SETFL, O_NONBLOCK);
  std::string junk(4096, 'x');
  while (::write(p[1], junk.data(), junk.size()) > 0) {
  }
  ::fcntl(p[1], F_SETFL, 0);
  pid_t doctor = ::fork();
  if (doctor == 0) {
    ::dup2(p[1], STDERR_FILENO);
    int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, STDOUT_FILENO);
    ::close(p[0]);
    ::execl(GPUREAP_BINARY, GPUREAP_BINARY, "doctor", "--fix", "--yes", "--json", "--settle", "0s",
            "--dev-root", dev_root.c_str(), nullptr);
    ::_exit(127);
  }
  ::close(p[1]);
  std::string wchan = "/proc/" + std::to_string(doctor) + "/wchan";
  if (!wait_for([&] { return read_first_line(wchan).find("pipe_write") != std::string::npos; },
                20000))
    return kNotHeld;

  // The diagnosed holder exits; an unrelated process that blocks every signal takes its PID.
  ::kill(holder, SIGKILL);
  ::waitpid(holder, nullptr, 0);
  std::ofstream("/proc/sys/kernel/ns_last_pid") << holder - 1;
  pid_t stranger = ::fork();
  if (stranger == 0) {
    block_all_signals();
    for (;;) ::pause();
  }
  if (stranger != holder) return kNoReuse;

  char buf[4096];
  std::string said;
  for (ssize_t n; (n = ::read(p[0], buf, sizeof buf)) > 0;)
    said.append(buf, static_cast<size_t>(n));
  std::ofstream(dev_root + "/doctor.err") << said;
  ::waitpid(doctor, nullptr, 0);
  bool untouched = is_alive(stranger) && no_signal_pending(stranger);
  ::kill(stranger, SIGKILL);
  ::waitpid(stranger, nullptr, 0);
  return untouched ? kUntouched : kSignalled;
}

TEST(DoctorFixIdentity, AHolderWhosePidWasReusedMeanwhileIsNeverSignalled) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root for a PID namespace and ns_last_pid";
  FakeDevRoot dev;
  REQUIRE_DOUBLE();
  FakeNvml nvml(nlohmann::json{{"gpus", nlohmann::json::array()}});
  int code = run_in_new_pid_namespace([&] { return fix_identity_init(dev.path(), nvml); });
  std::string said = read_text(dev.file("doctor.err"));
  SCOPED_TRACE("doctor said: " + said.substr(said.find_first_not_of('x') == std::string::npos
                                                 ? said.size()
                                                 : said.find_first_not_of('x')));
  if (code == kNoPidNamespace) GTEST_SKIP() << "PID namespaces are not available here";
  if (code == kNoReuse) GTEST_SKIP() << "the namespace did not hand out the PID again";
  ASSERT_NE(code, kNotHeld) << "doctor never blocked on its stderr";
  EXPECT_NE(said.find("Fixing"), std::string::npos) << "doctor never planned a fix";
  EXPECT_EQ(code, kUntouched) << "the process that took the diagnosed holder's PID was signalled";
}

}  // namespace
}  // namespace gpureap::testing

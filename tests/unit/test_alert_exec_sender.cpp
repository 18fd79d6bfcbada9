#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "alert/exec_sender.h"

namespace gpureap::alert {
namespace {

using namespace std::chrono_literals;

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/gpureap-exec-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string file(const std::string& name) const { return path + "/" + name; }
};

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

SinkConfig exec_sink(std::vector<std::string> command, std::chrono::milliseconds timeout = 10s) {
  SinkConfig s;
  s.name = "pager";
  s.type = SinkType::Exec;
  s.command = std::move(command);
  s.timeout = timeout;
  return s;
}

Delivery delivery(std::string body = R"({"status":"firing"})") {
  return {std::move(body), "GpuMemoryHigh", "firing", 1};
}

TEST(AlertExecSender, TheCommandGetsThePayloadOnStdinAndItsEnvironment) {
  TempDir dir;
  auto sender = make_exec_sender(exec_sink(
      {"/bin/sh", "-c",
       "cat > \"$0/payload\"; echo \"$GPUREAP_ALERT_STATUS $GPUREAP_ALERT_NAME $GPUREAP_SINK\" > "
       "\"$0/env\"; echo done",
       dir.path}));
  EXPECT_EQ(sender->target(), "/bin/sh");
  Attempt a = sender->send(delivery());
  EXPECT_TRUE(a.ok) << a.error;
  EXPECT_EQ(a.output, "done");
  EXPECT_EQ(read(dir.file("payload")), R"({"status":"firing"})");
  EXPECT_EQ(read(dir.file("env")), "firing GpuMemoryHigh pager\n");
}

TEST(AlertExecSender, AFailingCommandSaysWhatItPrinted) {
  auto sender = make_exec_sender(
      exec_sink({"/bin/sh", "-c", "cat >/dev/null; echo 'no route to pager' >&2; exit 3"}));
  Attempt a = sender->send(delivery());
  EXPECT_FALSE(a.ok);
  EXPECT_EQ(a.error, "/bin/sh exited with status 3; it said: no route to pager");
}

TEST(AlertExecSender, AMissingCommandIsAClearError) {
  auto sender = make_exec_sender(exec_sink({"/nonexistent/page", "--team", "gpu"}));
  Attempt a = sender->send(delivery());
  EXPECT_FALSE(a.ok);
  EXPECT_EQ(a.error,
            "cannot run /nonexistent/page: No such file or directory; check the path in the sink's "
            "command");
}

TEST(AlertExecSender, ACommandThatNeverReadsItsInputIsKilledAtTheTimeout) {
  // More than a pipe holds: the write cannot finish while the command does not read.
  auto sender = make_exec_sender(exec_sink({"/bin/sleep", "600"}, 300ms));
  Attempt a = sender->send(delivery(std::string(1 << 20, 'x')));
  EXPECT_FALSE(a.ok);
  EXPECT_EQ(a.error,
            "/bin/sleep did not finish within 300ms and was killed (it had not read all of its "
            "input): make it exit once it has read the alert from stdin, or raise the sink's "
            "timeout");
}

TEST(AlertExecSender, ACommandThatExitsWithoutReadingDoesNotHurtTheCaller) {
  // Writing into a pipe nobody reads raises SIGPIPE, which would end this test process.
  auto ok = make_exec_sender(exec_sink({"/bin/true"}));
  EXPECT_TRUE(ok->send(delivery(std::string(1 << 20, 'x'))).ok);
  auto fails = make_exec_sender(exec_sink({"/bin/false"}));
  Attempt a = fails->send(delivery(std::string(1 << 20, 'x')));
  EXPECT_FALSE(a.ok);
  EXPECT_EQ(a.error.rfind("/bin/false exited with status 1", 0), 0u) << a.error;
}

TEST(AlertExecSender, TheCommandInheritsNoDescriptor) {
  TempDir dir;
  // A descriptor without close-on-exec, like a listening socket a library opened.
  int fd = ::open("/dev/null", O_RDONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::dup2(fd, 200), 200);
  ::close(fd);
  auto sender = make_exec_sender(exec_sink({"/bin/sh", "-c",
                                            "cat >/dev/null; if [ -e /proc/$$/fd/200 ]; then echo "
                                            "leaked; else echo closed; fi > \"$0/fd\"",
                                            dir.path}));
  Attempt a = sender->send(delivery());
  ::close(200);
  ASSERT_TRUE(a.ok) << a.error;
  EXPECT_EQ(read(dir.file("fd")), "closed\n");
}

TEST(AlertExecSender, TheCommandInheritsNoBlockedOrIgnoredSignal) {
  // As in the daemon: its threads block SIGTERM, SIGHUP and SIGINT, and it ignores SIGPIPE.
  sigset_t term, old;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  ::pthread_sigmask(SIG_BLOCK, &term, &old);
  auto old_pipe = ::signal(SIGPIPE, SIG_IGN);
  // grep, not a shell: shells reset their signal mask when they start.
  auto sender =
      make_exec_sender(exec_sink({"/bin/grep", "-E", "^Sig(Blk|Ign):", "/proc/self/status"}));
  Attempt a = sender->send(delivery());
  ::signal(SIGPIPE, old_pipe);
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  ASSERT_TRUE(a.ok) << a.error;
  EXPECT_EQ(a.output, "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000");
}

TEST(AlertExecSender, CancelEndsARunInProgress) {
  TempDir dir;
  // The command says it runs (a file), then runs for ten minutes.
  auto sender = make_exec_sender(exec_sink(
      {"/bin/sh", "-c", "echo > " + dir.file("running") + "; exec /bin/sleep 600"}, 600s));
  Attempt a;
  std::thread t([&] { a = sender->send(delivery()); });
  const auto until = std::chrono::steady_clock::now() + 60s;
  while (!std::filesystem::exists(dir.file("running")) && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(10ms);
  EXPECT_TRUE(std::filesystem::exists(dir.file("running"))) << "the command did not start";
  sender->cancel();
  t.join();
  EXPECT_FALSE(a.ok);
  // Killed while it ran.
  EXPECT_NE(a.error.find("the daemon is stopping"), std::string::npos) << a.error;
}

}  // namespace
}  // namespace gpureap::alert

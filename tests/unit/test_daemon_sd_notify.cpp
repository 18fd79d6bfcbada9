#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "daemon/sd_notify.h"

namespace gpureap::daemon {
namespace {

// A datagram socket standing in for systemd's notification socket.
class FakeSystemd {
 public:
  explicit FakeSystemd(bool abstract = false) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    socklen_t len;
    if (abstract) {
      name_ = "@gpureap-test-" + std::to_string(::getpid());
      std::memcpy(addr.sun_path + 1, name_.c_str() + 1, name_.size() - 1);
      len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name_.size());
    } else {
      char dir[] = "/tmp/gpureap-notify-XXXXXX";
      dir_ = ::mkdtemp(dir);
      name_ = dir_ + "/notify";
      std::strcpy(addr.sun_path, name_.c_str());
      len = sizeof addr;
    }
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0)
      ADD_FAILURE() << "bind: " << std::strerror(errno);
  }
  ~FakeSystemd() {
    ::close(fd_);
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  const std::string& name() const { return name_; }
  std::string receive() {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 5000) != 1) return "(nothing)";
    char buf[4096];
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    return n < 0 ? "(error)" : std::string(buf, static_cast<size_t>(n));
  }

 private:
  int fd_ = -1;
  std::string dir_, name_;
};

TEST(DaemonSdNotify, SendsEachMessageAsOneDatagram) {
  FakeSystemd systemd;
  Notifier n(systemd.name(), std::nullopt);
  EXPECT_TRUE(n.enabled());
  EXPECT_TRUE(n.ready());
  EXPECT_TRUE(n.status("2 GPUs\nsecond line"));
  EXPECT_TRUE(n.ping_watchdog());
  EXPECT_TRUE(n.reloading());
  EXPECT_TRUE(n.stopping());
  EXPECT_EQ(systemd.receive(), "READY=1");
  EXPECT_EQ(systemd.receive(), "STATUS=2 GPUs second line");  // one line: no forged assignment
  EXPECT_EQ(systemd.receive(), "WATCHDOG=1");
  EXPECT_EQ(systemd.receive(), "RELOADING=1");
  EXPECT_EQ(systemd.receive(), "STOPPING=1");
}

TEST(DaemonSdNotify, AbstractSocketNames) {
  FakeSystemd systemd(true);
  Notifier n(systemd.name(), std::nullopt);
  EXPECT_TRUE(n.ready());
  EXPECT_EQ(systemd.receive(), "READY=1");
}

TEST(DaemonSdNotify, WithoutNotifySocketEverySendIsANoOp) {
  ::unsetenv("NOTIFY_SOCKET");
  auto n = Notifier::from_environment();
  EXPECT_FALSE(n.enabled());
  EXPECT_TRUE(n.ready());
  EXPECT_FALSE(n.watchdog());
}

TEST(DaemonSdNotify, WatchdogPeriodFromTheEnvironmentOnlyForThisProcess) {
  FakeSystemd systemd;
  ::setenv("NOTIFY_SOCKET", systemd.name().c_str(), 1);
  ::setenv("WATCHDOG_USEC", "3000000", 1);
  ::unsetenv("WATCHDOG_PID");
  EXPECT_EQ(Notifier::from_environment().watchdog(), std::chrono::seconds(3));
  ::setenv("WATCHDOG_PID", std::to_string(::getpid()).c_str(), 1);
  EXPECT_EQ(Notifier::from_environment().watchdog(), std::chrono::seconds(3));
  ::setenv("WATCHDOG_PID", "1", 1);  // systemd watches another process
  EXPECT_FALSE(Notifier::from_environment().watchdog());
  ::setenv("WATCHDOG_PID", std::to_string(::getpid()).c_str(), 1);
  ::setenv("WATCHDOG_USEC", "soon", 1);
  EXPECT_FALSE(Notifier::from_environment().watchdog());
  ::unsetenv("NOTIFY_SOCKET");
  ::unsetenv("WATCHDOG_USEC");
  ::unsetenv("WATCHDOG_PID");
}

TEST(DaemonSdNotify, AMissingSocketIsAFailedSendNotACrash) {
  Notifier n("/nonexistent/notify", std::nullopt);
  EXPECT_FALSE(n.ready());
  Notifier relative("notify", std::nullopt);
  EXPECT_FALSE(relative.ready());
}

}  // namespace
}  // namespace gpureap::daemon

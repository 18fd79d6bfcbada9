// `gpureap run` whose teardown cannot read /proc (gpureap out of file descriptors when its
// command exits): an unread job is no job gone. The report says the teardown could not be
// verified, with why and what to do, and claims no leftover ended, while one runs on; nor, with
// no driver to ask, that the job's GPU files were released.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <fstream>

#include "../unit/skip_sanitized.h"
#include "support.h"

namespace gpureap::testing {
namespace starved_teardown {

TEST(RunStarvedTeardown, AJobItCannotReadIsNeverReportedGone) {
  SKIP_UNDER_SANITIZERS();
  FakeDevRoot dev;
  TempDir dir;
  KillStrays strays;
  // The command leaves a worker behind and exits once the test says so.
  const std::string script = "sleep 1000 & echo $! > " + dir.file("left") + "; while [ ! -e " +
                             dir.file("go") + " ]; do sleep 0.02; done; exit 0";
  BackgroundGpureap gpureap({"--dev-root", dev.path(), "--nvml-library",
                             dir.file("no-such-libnvidia-ml.so.1"), "run", "--report",
                             dir.file("report.json"), "--grace", "200ms", "--release-timeout", "1s",
                             "--sample", "0", "--", "sh", "-c", script});
  ASSERT_TRUE(wait_for_file(dir.file("left")));
  const pid_t left = static_cast<pid_t>(std::stol(read_text(dir.file("left"))));
  strays.pids = {left};
  // From now on gpureap has no descriptor to open (its limit, as prlimit(1) sets another's):
  // its report file and its /proc root are already open.
  struct rlimit old {};
  ASSERT_EQ(::prlimit(gpureap.pid(), RLIMIT_NOFILE, nullptr, &old), 0);
  const struct rlimit none = {0, old.rlim_max};
  ASSERT_EQ(::prlimit(gpureap.pid(), RLIMIT_NOFILE, &none, nullptr), 0);
  std::ofstream(dir.file("go")) << "go\n";
  auto r = gpureap.wait();
  EXPECT_EQ(r.exit_code, 0) << r.err;  // CMD's own status: the job ran as it should

  auto report = report_of(dir);
  EXPECT_EQ(report["teardown_verified"], false) << report.dump(2);
  ASSERT_TRUE(report["teardown_error"].is_object()) << report.dump(2);
  const auto message = report["teardown_error"]["message"].get<std::string>();
  EXPECT_NE(message.find("Too many open files"), std::string::npos) << message;
  EXPECT_NE(report["teardown_error"]["hint"].get<std::string>().find("ulimit -n"),
            std::string::npos)
      << report.dump(2);
  for (const auto& l : report["leftovers"]) EXPECT_EQ(l["ended"], false) << report.dump(2);
  EXPECT_NE(r.err.find("COULD NOT VERIFY that the job's processes are gone"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("ulimit -n"), std::string::npos) << r.err;
  // Nor is the release taken from that view: no driver answered, and a scan that could not read
  // /proc cannot say that no process of the job holds a GPU file (the worker runs on).
  const auto& release = report["release"];
  EXPECT_EQ(release["checked"], true) << report.dump(2);
  EXPECT_EQ(release["method"], "device-files") << report.dump(2);
  EXPECT_EQ(release["released"], false) << report.dump(2);
  EXPECT_EQ(release["verified"], false) << report.dump(2);
  ASSERT_TRUE(release["error"].is_object()) << report.dump(2);
  const auto why = release["error"]["message"].get<std::string>();
  EXPECT_EQ(why.rfind("no driver answered, and the holder scan failed: ", 0), 0u) << why;
  EXPECT_NE(why.find("Too many open files"), std::string::npos) << why;
  EXPECT_NE(why.find("ulimit -n"), std::string::npos) << why;
  EXPECT_NE(r.err.find("COULD NOT VERIFY that the job's GPU memory was released: no driver "
                       "answered, and the holder scan failed"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("no process of the job holds a GPU device file"), std::string::npos)
      << r.err;
  // What a clean report would have called gone runs on.
  EXPECT_TRUE(is_alive(left));
}

}  // namespace starved_teardown
}  // namespace gpureap::testing

// The holder scan under a tiny limit of open files: whatever gpureap cannot read for want of a
// file descriptor is said (what failed, why, what to do), the exit status and the JSON say the
// scan is incomplete, and no answer reads as "nothing holds the GPU" while a process does.
// Both scan paths: /proc alone (GPUREAP_BPF=0) and, as root, the kernel's open-file iterator.
#include <gtest/gtest.h>
#include <unistd.h>

#include "../unit/skip_sanitized.h"
#include "support.h"

namespace gpureap::testing {
namespace {

// `gpureap ps --json` with a soft and hard limit of `limit` open files, set in the child.
RunResult ps_with_fd_limit(int limit, const FakeDevRoot& dev, bool kernel_iterator) {
  std::vector<std::string> env = {"PATH=/usr/bin:/bin", "NO_COLOR=1"};
  if (!kernel_iterator) env.push_back("GPUREAP_BPF=0");
  return run_gpureap_with_fd_limit(
      limit, {"ps", "--json", "--dev-root", dev.path(), "--nvml-library", kNoNvml}, env);
}

// Over limits from too few to plenty, each answer is one of: the whole truth (exit 0, the
// holder listed, complete); a scan that says it failed (exit 2, "complete": false, the failure
// and its remedy in scan_failures and on stderr); or no answer at all (exit 2, the reason on
// stderr). Which limits give which depends on how many fds the scan's threads hold at once (the
// collector's own test makes a partial scan for sure).
void check_every_limit(bool kernel_iterator) {
  FakeDevRoot dev;
  Child holder = holding(dev, "nvidia0");
  for (int limit = 4; limit <= 24; ++limit) {
    SCOPED_TRACE("ulimit -n " + std::to_string(limit));
    auto r = ps_with_fd_limit(limit, dev, kernel_iterator);
    // Too few for the dynamic loader to open gpureap's libraries: no answer of gpureap's.
    if (r.exit_code == 127 &&
        r.err.find("error while loading shared libraries") != std::string::npos)
      continue;
    if (r.exit_code == 0) {
      auto snap = parse_output(r);
      EXPECT_EQ(snap["complete"], true) << r.out;
      EXPECT_TRUE(snap["scan_failures"].empty()) << r.out;
      EXPECT_FALSE(row_of(snap, holder.pid()).is_null()) << r.out << r.err;
      continue;
    }
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("ulimit -n"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("Too many open files"), std::string::npos) << r.err;
    if (r.out.empty()) continue;  // it could not start the scan, and said so
    auto snap = parse_output(r);
    EXPECT_EQ(snap["complete"], false) << r.out;
    EXPECT_FALSE(snap["scan_failures"].empty()) << r.out;
    if (snap["scan_failures"].empty()) continue;
    const auto failure = snap["scan_failures"][0].get<std::string>();
    EXPECT_NE(failure.find("Too many open files"), std::string::npos) << failure;
    EXPECT_NE(failure.find("ulimit -n"), std::string::npos) << failure;
  }
  // With plenty the answer is whole.
  auto r = ps_with_fd_limit(256, dev, kernel_iterator);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto snap = parse_output(r);
  EXPECT_EQ(snap["complete"], true) << r.out;
  EXPECT_FALSE(row_of(snap, holder.pid()).is_null()) << r.out;
}

TEST(ScanFailures, ProcScanUnderATinyFdLimitSaysItFailed) {
  SKIP_UNDER_SANITIZERS();
  // The limit the issue was found under: never a clean empty answer.
  FakeDevRoot dev;
  Child holder = holding(dev, "nvidia0");
  auto r = ps_with_fd_limit(6, dev, false);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("ulimit -n"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  check_every_limit(false);
}

TEST(ScanFailures, KernelIteratorScanUnderATinyFdLimitSaysItFailed) {
  SKIP_UNDER_SANITIZERS();
  if (::geteuid() != 0) GTEST_SKIP() << "the kernel's open-file iterator needs root";
  check_every_limit(true);
}

}  // namespace
}  // namespace gpureap::testing

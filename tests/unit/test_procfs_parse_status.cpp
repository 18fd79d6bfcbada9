// Parsers in src/procfs/parse_status.cpp: status, cmdline, wchan, /proc/stat btime, /proc/devices.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "proc_fixture.h"
#include "procfs/parsers.h"

namespace {

using gpureap::procfs::parse_boot_time;
using gpureap::procfs::parse_char_major;
using gpureap::procfs::parse_cmdline;
using gpureap::procfs::parse_status;
using gpureap::procfs::parse_wchan;
using namespace std::string_literals;

using gpureap::testing::proc_fixture;

// ---- status ----

TEST(ParseStatus, OneLevelNSpid) {
  auto s = parse_status(proc_fixture("host/4242/status"));
  ASSERT_TRUE(s.uid.has_value());
  ASSERT_TRUE(s.euid.has_value());
  EXPECT_EQ(*s.uid, 54321u);
  EXPECT_EQ(*s.euid, 54321u);
  EXPECT_EQ(s.ns_pids, (std::vector<pid_t>{4242}));
  EXPECT_EQ(s.threads, 48);
  EXPECT_EQ(s.rss_bytes, 2097152ull * 1024);
}

TEST(ParseStatus, TwoLevelNSpid) {
  auto s = parse_status(proc_fixture("host/4250/status"));
  EXPECT_EQ(s.ns_pids, (std::vector<pid_t>{4250, 17}));
  EXPECT_EQ(s.threads, 1);
  EXPECT_EQ(s.rss_bytes, 524288ull * 1024);
}

TEST(ParseStatus, ThreeLevelNSpidOutermostFirst) {
  auto s = parse_status(proc_fixture("host/6001/status"));
  EXPECT_EQ(s.ns_pids, (std::vector<pid_t>{6001, 45, 7}));
  EXPECT_EQ(s.uid, 0u);
  EXPECT_EQ(s.euid, 0u);
  EXPECT_EQ(s.threads, 8);
}

TEST(ParseStatus, KernelThreadAndZombieHaveNoRss) {
  auto k = parse_status(proc_fixture("host/2/status"));
  EXPECT_EQ(k.rss_bytes, std::nullopt);
  EXPECT_EQ(k.uid, 0u);
  EXPECT_EQ(k.ns_pids, (std::vector<pid_t>{2}));
  EXPECT_EQ(k.threads, 1);

  auto z = parse_status(proc_fixture("host/4300/status"));
  EXPECT_EQ(z.rss_bytes, std::nullopt);
  EXPECT_EQ(z.uid, 54321u);
  EXPECT_EQ(z.ns_pids, (std::vector<pid_t>{4300}));
}

TEST(ParseStatus, EscapedHostileNameDoesNotDisturbOtherFields) {
  auto s = parse_status(proc_fixture("hostile-comm/104/status"));
  EXPECT_EQ(s.uid, 1000u);
  EXPECT_EQ(s.ns_pids, (std::vector<pid_t>{104}));
  EXPECT_EQ(s.rss_bytes, 400ull * 1024);
}

TEST(ParseStatus, RealAndEffectiveUidAreTheFirstTwoValues) {
  auto s = parse_status("Uid:\t1000\t0\t0\t0\nGid:\t5\t5\t5\t5\n");
  EXPECT_EQ(s.uid, 1000u);
  EXPECT_EQ(s.euid, 0u);
}

TEST(ParseStatus, NSpidIsNotConfusedWithNStgidNSpgidNSsid) {
  auto s = parse_status("NStgid:\t11\t1\nNSpgid:\t22\t2\nNSsid:\t33\t3\nNSpid:\t44\t4\n");
  EXPECT_EQ(s.ns_pids, (std::vector<pid_t>{44, 4}));
}

TEST(ParseStatus, NameThatLooksLikeAFieldIsIgnored) {
  auto s = parse_status("Name:\tUid:\t0\t0\t0\t0\nUid:\t7\t8\t9\t9\n");
  EXPECT_EQ(s.uid, 7u);
  EXPECT_EQ(s.euid, 8u);
}

TEST(ParseStatus, MissingFieldsStayEmpty) {
  auto s = parse_status("Name:\tx\nState:\tS (sleeping)\n");
  EXPECT_EQ(s.uid, std::nullopt);
  EXPECT_EQ(s.euid, std::nullopt);
  EXPECT_TRUE(s.ns_pids.empty());
  EXPECT_EQ(s.threads, std::nullopt);
  EXPECT_EQ(s.rss_bytes, std::nullopt);

  auto e = parse_status("");
  EXPECT_EQ(e.uid, std::nullopt);
  EXPECT_TRUE(e.ns_pids.empty());
}

TEST(ParseStatus, LastLineWithoutNewlineIsRead) {
  auto s = parse_status("Threads:\t5\nVmRSS:\t     123 kB");
  EXPECT_EQ(s.threads, 5);
  EXPECT_EQ(s.rss_bytes, 123ull * 1024);
}

TEST(ParseStatus, NonNumericValuesStayEmpty) {
  auto s = parse_status("Uid:\tx\ty\tz\tw\nNSpid:\t42\tabc\nThreads:\tmany\nVmRSS:\t kB\n");
  EXPECT_EQ(s.uid, std::nullopt);
  EXPECT_TRUE(s.ns_pids.empty());
  EXPECT_EQ(s.threads, std::nullopt);
  EXPECT_EQ(s.rss_bytes, std::nullopt);
  // A uid line with one value has no effective uid to give.
  EXPECT_EQ(parse_status("Uid:\t1000\n").uid, std::nullopt);
}

// The contract of parse_status's numbers(): "empty when any is not a number". A token with
// trailing junk ("17x") is not a number.
TEST(ParseStatus, NumberWithTrailingJunkMakesTheListEmpty) {
  EXPECT_TRUE(parse_status("NSpid:\t4250\t17x\n").ns_pids.empty());
  auto s = parse_status("Uid:\t1000x\t1000\t1000\t1000\n");
  EXPECT_EQ(s.uid, std::nullopt);
}

// ---- cmdline ----

TEST(ParseCmdline, SplitsAtNulKeepingSpacesAndEmptyArguments) {
  EXPECT_EQ(parse_cmdline(proc_fixture("host/4242/cmdline")),
            (std::vector<std::string>{"python3", "train.py", "--run-name", "my run", "--tag", ""}));
  EXPECT_EQ(parse_cmdline(proc_fixture("host/1/cmdline")),
            (std::vector<std::string>{"/sbin/init", "splash"}));
}

TEST(ParseCmdline, KernelThreadAndZombieHaveNone) {
  EXPECT_TRUE(parse_cmdline(proc_fixture("host/2/cmdline")).empty());
  EXPECT_TRUE(parse_cmdline(proc_fixture("host/4300/cmdline")).empty());
  EXPECT_TRUE(parse_cmdline("").empty());
}

TEST(ParseCmdline, RewrittenTitleWithoutNul) {
  // setproctitle() style: one string, no terminating NUL.
  EXPECT_EQ(parse_cmdline("nginx: worker process"),
            (std::vector<std::string>{"nginx: worker process"}));
}

TEST(ParseCmdline, EmptyArgvZero) {
  EXPECT_EQ(parse_cmdline("\0"s), (std::vector<std::string>{""}));
  EXPECT_EQ(parse_cmdline("\0b\0"s), (std::vector<std::string>{"", "b"}));
}

TEST(ParseCmdline, BytesAreKeptAsIs) {
  EXPECT_EQ(parse_cmdline("\x1b[2J\0\xff\xfe\0"s),
            (std::vector<std::string>{"\x1b[2J", "\xff\xfe"}));
}

// ---- wchan ----

TEST(ParseWchan, ZeroAndEmptyMeanNone) {
  EXPECT_EQ(parse_wchan("0"), std::nullopt);
  EXPECT_EQ(parse_wchan("0\n"), std::nullopt);
  EXPECT_EQ(parse_wchan(""), std::nullopt);
  EXPECT_EQ(parse_wchan(proc_fixture("host/4242/wchan")), std::nullopt);
}

TEST(ParseWchan, FunctionName) {
  EXPECT_EQ(parse_wchan(proc_fixture("host/4250/wchan")), "rpc_wait_bit_killable");
  EXPECT_EQ(parse_wchan("do_wait\n"), "do_wait");
}

// ---- /proc/stat btime ----

TEST(ParseBootTime, FromFixture) {
  EXPECT_EQ(parse_boot_time(proc_fixture("host/stat")), 1700000000);
}

TEST(ParseBootTime, MissingOrBad) {
  EXPECT_EQ(parse_boot_time("cpu  1 2 3\nctxt 5\n"), std::nullopt);
  EXPECT_EQ(parse_boot_time("cpu  1 2 3\nbtime x\n"), std::nullopt);
  EXPECT_EQ(parse_boot_time(""), std::nullopt);
}

TEST(ParseBootTime, LastLineWithoutNewline) {
  EXPECT_EQ(parse_boot_time("cpu  1 2 3\nbtime 1699999999"), 1699999999);
}

// ---- /proc/devices ----

TEST(ParseCharMajor, FromFixture) {
  std::string devices = proc_fixture("host/devices");
  EXPECT_EQ(parse_char_major(devices, "nvidia-uvm"), 508u);
  EXPECT_EQ(parse_char_major(devices, "nvidia-frontend"), 195u);
  EXPECT_EQ(parse_char_major(devices, "drm"), 226u);
  EXPECT_EQ(parse_char_major(devices, "mem"), 1u);
  // Names must match exactly, not by prefix.
  EXPECT_EQ(parse_char_major(devices, "nvidia"), std::nullopt);
  EXPECT_EQ(parse_char_major(devices, "nvidia-uv"), std::nullopt);
  // Block devices are not character devices.
  EXPECT_EQ(parse_char_major(devices, "blkext"), std::nullopt);
  EXPECT_EQ(parse_char_major(devices, "sd"), std::nullopt);
}

TEST(ParseCharMajor, OnlyTheCharacterSection) {
  EXPECT_EQ(parse_char_major("Character devices:\n  1 mem\n\nBlock devices:\n511 nvidia-uvm\n",
                             "nvidia-uvm"),
            std::nullopt);
  EXPECT_EQ(parse_char_major("Block devices:\n511 nvidia-uvm\n", "nvidia-uvm"), std::nullopt);
  EXPECT_EQ(parse_char_major("", "nvidia-uvm"), std::nullopt);
  EXPECT_EQ(parse_char_major("Character devices:\n511 nvidia-uvm", "nvidia-uvm"), 511u);
}

}  // namespace

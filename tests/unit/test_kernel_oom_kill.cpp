// kernel::oom_kill: the process the OOM killer's own record names, and nothing for anyone
// else's text.
#include <gtest/gtest.h>

#include "kernel/oom_kill.h"

namespace gpureap::kernel {
namespace {

KmsgRecord oom_record(std::string text, unsigned facility = 0) {
  KmsgRecord r;
  r.facility = facility;
  r.level = 3;
  r.seq = 812;
  r.usec = 5'000'123'456;
  r.text = std::move(text);
  return r;
}

TEST(OomKill, TheMachinesAndACgroupsRecordsNameThePidNameAndUid) {
  auto k = oom_kill(oom_record(
      "Out of memory: Killed process 4194303 (python3) total-vm:20971520kB, anon-rss:16777216kB, "
      "file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:33000kB oom_score_adj:0"));
  ASSERT_TRUE(k);
  EXPECT_EQ(k->pid, 4194303);
  EXPECT_EQ(k->name, "python3");
  EXPECT_EQ(k->uid, 1000u);
  EXPECT_FALSE(k->memory_cgroup);
  EXPECT_EQ(k->seq, 812u);
  EXPECT_EQ(k->since_boot_usec, 5'000'123'456u);
  auto c = oom_kill(
      oom_record("Memory cgroup out of memory: Killed process 504 (pt_main_thread) total-vm:1kB, "
                 "anon-rss:1kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:4kB oom_score_adj:0"));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->pid, 504);
  EXPECT_EQ(c->name, "pt_main_thread");
  EXPECT_EQ(c->uid, 0u);
  EXPECT_TRUE(c->memory_cgroup);
  // Kernels before 5.0: the bare line, no UID.
  auto old =
      oom_kill(oom_record("Killed process 77 (java) total-vm:1kB, anon-rss:1kB, file-rss:0kB"));
  ASSERT_TRUE(old);
  EXPECT_EQ(old->pid, 77);
  EXPECT_EQ(old->uid, std::nullopt);
}

TEST(OomKill, ANameWithParenthesesEndsAtTheSizes) {
  auto k =
      oom_kill(oom_record("Out of memory: Killed process 9 (a) total-vm:1kB (b) total-vm:2kB, "
                          "anon-rss:1kB, file-rss:0kB, shmem-rss:0kB, UID:7 pgtables:4kB"));
  ASSERT_TRUE(k);
  EXPECT_EQ(k->pid, 9);
  EXPECT_EQ(k->name, "a) total-vm:1kB (b");
  EXPECT_EQ(k->uid, 7u);
}

TEST(OomKill, NothingButTheKernelsOwnWordsCount) {
  const std::string real = "Out of memory: Killed process 504 (python3) total-vm:1kB, UID:1000";
  EXPECT_FALSE(oom_kill(oom_record(real, 1)));  // a user's write to /dev/kmsg
  EXPECT_FALSE(oom_kill(oom_record("python3: " + real)));
  EXPECT_FALSE(
      oom_kill(oom_record("oom-kill:constraint=CONSTRAINT_NONE,task=python3,pid=504,uid=0")));
  EXPECT_FALSE(oom_kill(oom_record("Out of memory: Killed process (python3) total-vm:1kB")));
  EXPECT_FALSE(oom_kill(oom_record("Out of memory: Killed process 0 (swapper) total-vm:1kB")));
  EXPECT_FALSE(oom_kill(oom_record("Out of memory: Killed process -5 (x) total-vm:1kB")));
  auto fragment = oom_record(real);
  fragment.fragment = true;
  EXPECT_FALSE(oom_kill(fragment));
}

}  // namespace
}  // namespace gpureap::kernel

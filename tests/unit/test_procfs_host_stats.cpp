#include <gtest/gtest.h>

#include "procfs/host_stats.h"

namespace gpureap::procfs {
namespace {

TEST(ProcfsHostStats, ParsesLoadAndMemory) {
  HostStats h;
  parse_loadavg("0.52 1.61 10.70 2/1234 5678\n", h);
  EXPECT_DOUBLE_EQ(*h.load1, 0.52);
  EXPECT_DOUBLE_EQ(*h.load5, 1.61);
  EXPECT_DOUBLE_EQ(*h.load15, 10.70);
  parse_meminfo(
      "MemTotal:       65843036 kB\nMemFree:         1000 kB\nMemAvailable:   51234567 kB\n", h);
  EXPECT_EQ(h.mem_total_bytes, 65843036ull * 1024);
  EXPECT_EQ(h.mem_available_bytes, 51234567ull * 1024);
  HostStats bad;
  parse_loadavg("garbage", bad);
  parse_meminfo("MemTotal: lots\n", bad);
  EXPECT_FALSE(bad.load1);
  EXPECT_FALSE(bad.mem_total_bytes);
  HostStats none = read_host_stats("/nonexistent");
  EXPECT_FALSE(none.load1);
  EXPECT_FALSE(none.mem_total_bytes);
}

TEST(ProcfsHostStats, ReadsTheLiveProcfs) {
  HostStats h = read_host_stats("/proc");
  EXPECT_TRUE(h.load1);
  ASSERT_TRUE(h.mem_total_bytes);
  ASSERT_TRUE(h.mem_available_bytes);
  EXPECT_LE(*h.mem_available_bytes, *h.mem_total_bytes);
}

}  // namespace
}  // namespace gpureap::procfs

#include <gtest/gtest.h>

#include "history/ring.h"

namespace gpureap::history {
namespace {

std::vector<int> items(const Ring<int>& r) {
  std::vector<int> out;
  for (size_t i = 0; i < r.size(); ++i) out.push_back(r[i]);
  return out;
}

TEST(DaemonRing, KeepsTheNewestUpToItsBound) {
  Ring<int> r(3);
  for (int i = 1; i <= 5; ++i) r.push_back(i);
  EXPECT_EQ(items(r), (std::vector<int>{3, 4, 5}));
  EXPECT_EQ(r.front(), 3);
  EXPECT_EQ(r.back(), 5);
  r.pop_front();
  EXPECT_EQ(items(r), (std::vector<int>{4, 5}));
  r.push_back(6);
  r.push_back(7);
  EXPECT_EQ(items(r), (std::vector<int>{5, 6, 7}));
}

TEST(DaemonRing, StorageGrowsOnlyAsNeeded) {
  Ring<int> r(100000);
  EXPECT_EQ(r.capacity(), 0u);
  r.push_back(1);
  EXPECT_LE(r.capacity(), 4u);
  for (int i = 0; i < 100; ++i) r.push_back(i);
  EXPECT_LE(r.capacity(), 256u);
}

TEST(DaemonRing, ShrinkingDropsTheOldest) {
  Ring<int> r(10);
  for (int i = 0; i < 10; ++i) r.push_back(i);
  r.pop_front();
  r.push_back(10);  // wrapped around
  r.set_max_size(3);
  EXPECT_EQ(items(r), (std::vector<int>{8, 9, 10}));
  EXPECT_EQ(r.capacity(), 3u);
  r.push_back(11);
  EXPECT_EQ(items(r), (std::vector<int>{9, 10, 11}));
}

}  // namespace
}  // namespace gpureap::history

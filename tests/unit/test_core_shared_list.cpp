// core::SharedList: copies share their elements; an edit never shows in a copy taken before.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "core/shared_list.h"

namespace gpureap::core {
namespace {

TEST(SharedList, ReadsLikeTheVectorItWasMadeFrom) {
  SharedList<std::string> list = std::vector<std::string>{"a", "b", "c"};
  ASSERT_EQ(list.size(), 3u);
  EXPECT_FALSE(list.empty());
  EXPECT_EQ(list[1], "b");
  EXPECT_EQ(list.front(), "a");
  EXPECT_EQ(list.back(), "c");
  std::string joined;
  for (const auto& s : list) joined += s;
  EXPECT_EQ(joined, "abc");
  const std::vector<std::string>& as_vector = list;
  EXPECT_EQ(as_vector, (std::vector<std::string>{"a", "b", "c"}));
  SharedList<std::string> none;
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none.begin(), none.end());
  EXPECT_FALSE(none.shares_with(SharedList<std::string>{}));
}

TEST(SharedList, CopiesShareTheElementsUntilOneIsEdited) {
  SharedList<std::string> original = {"a", "b"};
  SharedList<std::string> copy = original;
  EXPECT_TRUE(copy.shares_with(original));
  EXPECT_EQ(&copy[0], &original[0]);  // the same element, not an equal one

  copy.edit()[0] = "changed";
  EXPECT_FALSE(copy.shares_with(original));
  EXPECT_EQ(original[0], "a");  // the copy taken before does not see the edit
  EXPECT_EQ(copy[0], "changed");
  EXPECT_EQ(copy[1], "b");
}

TEST(SharedList, AnEditOfAListNobodySharesChangesItInPlace) {
  SharedList<std::string> list = {"a", "b"};
  const std::string* at = &list[0];
  list.edit()[0] = "z";
  EXPECT_EQ(&list[0], at);  // not copied
  {
    SharedList<std::string> gone = list;  // shared a while, then let go
  }
  list.edit()[1] = "y";
  EXPECT_EQ(&list[0], at);
  EXPECT_EQ(list[0], "z");
  EXPECT_EQ(list[1], "y");
  SharedList<std::string> empty;
  empty.push_back("x");  // an empty list can be edited too
  EXPECT_EQ(empty.size(), 1u);
}

TEST(SharedList, AssigningAVectorGivesANewList) {
  SharedList<int> a = {1, 2};
  SharedList<int> b = a;
  a = std::vector<int>{3};
  EXPECT_FALSE(a.shares_with(b));
  EXPECT_EQ(b.size(), 2u);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0], 3);
}

TEST(SharedList, ReadersOnOtherThreadsKeepTheirCopyWhileTheOwnerEdits) {
  SharedList<int> list = std::vector<int>(1000, 7);
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t)
    readers.emplace_back([copy = list] {
      long sum = 0;
      for (int round = 0; round < 100; ++round)
        for (int v : copy) sum += v;
      EXPECT_EQ(sum, 100L * 1000 * 7);
    });
  for (int round = 0; round < 100; ++round) list.edit()[0] = round;
  for (auto& r : readers) r.join();
  EXPECT_EQ(list[0], 99);
  EXPECT_EQ(list[1], 7);
}

}  // namespace
}  // namespace gpureap::core

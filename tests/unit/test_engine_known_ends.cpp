// KnownEnds: the ends a collection hands to the join, merged from the tracker and ScanLineage,
// and the listed PIDs' ends kept while listed, whatever else the sources evict.
#include <gtest/gtest.h>

#include "engine/known_ends.h"

namespace gpureap::engine {
namespace {

TEST(KnownEnds, TheFirstSourcesLifeWinsAndEachNumberKeepsItsLatestFew) {
  Ends into{{10, {{5, 9, true}}}};
  merge_ends(into, {{10, {{5, 12, false}, {20, 30, true}}}, {11, {{1, 2, true}}}});
  EXPECT_EQ(into.at(10), (std::vector<core::ProcessEnd>{{5, 9, true}, {20, 30, true}}));
  EXPECT_EQ(into.at(11), (std::vector<core::ProcessEnd>{{1, 2, true}}));
  merge_ends(into, {{10, {{40, 41}, {50, 51}, {60, 61}}}});
  EXPECT_EQ(into.at(10).size(), 4u);
  EXPECT_EQ(into.at(10).front().start_ticks, 20u);  // the oldest went
}

TEST(KnownEnds, AListedPidsEndOutlivesTheSourcesEvictingIt) {
  ListedEnds listed;
  Ends first{{100, {{50, 60}}}, {200, {{70, 80}}}};
  listed.keep(first, {{100, 55}});
  // The sources evicted both records (a flood of other ends): 100 is listed still, 200 not.
  Ends later;
  listed.keep(later, {{100, 55}});
  EXPECT_EQ(later, (Ends{{100, {{50, 60}}}}));
  // No longer listed: no longer kept.
  Ends after;
  listed.keep(after, {});
  EXPECT_TRUE(after.empty());
  Ends again;
  listed.keep(again, {{100, 55}});
  EXPECT_TRUE(again.empty());
}

TEST(KnownEnds, AReparentingTheTrackerKnowsIsNotOverwritten) {
  std::map<pid_t, pid_t> into{{5, 4}};
  merge_exited_parents(into, {{5, 3}, {6, 4}});
  EXPECT_EQ(into, (std::map<pid_t, pid_t>{{5, 4}, {6, 4}}));
}

}  // namespace
}  // namespace gpureap::engine

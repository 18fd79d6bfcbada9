#include <gtest/gtest.h>

#include "procfs/parsers.h"

namespace gpureap::procfs {
namespace {

using namespace std::string_literals;

TEST(ParseRankLabels, TorchrunsEnvironment) {
  // As torchrun's agent wrote it for local rank 3 of 4 (seen in a real rank's environ).
  auto text =
      "PATH=/usr/bin\0LOCAL_RANK=3\0RANK=3\0GROUP_RANK=0\0LOCAL_WORLD_SIZE=4\0WORLD_SIZE=4\0"
      "MASTER_ADDR=127.0.0.1\0TORCHELASTIC_RESTART_COUNT=0\0TORCHELASTIC_MAX_RESTARTS=2\0"
      "TORCHELASTIC_RUN_ID=none\0"s;
  auto l = parse_rank_labels(text);
  ASSERT_TRUE(l);
  EXPECT_EQ(l->rank, 3u);
  EXPECT_EQ(l->local_rank, 3u);
  EXPECT_EQ(l->world_size, 4u);
  EXPECT_EQ(l->local_world_size, 4u);
  EXPECT_EQ(l->restart_count, 0u);
  EXPECT_EQ(l->max_restarts, 2u);
  EXPECT_EQ(l->run_id, "none");
}

TEST(ParseRankLabels, NoLabelsAndBadNumbersAreNone) {
  EXPECT_FALSE(parse_rank_labels(""));
  EXPECT_FALSE(parse_rank_labels("HOME=/root\0PATH=/bin\0"s));
  // Not a number, a sign, a number too large, a name that only starts alike: no label.
  EXPECT_FALSE(parse_rank_labels("RANK=x\0LOCAL_RANK=-1\0WORLD_SIZE=99999999999\0RANKS=2\0"s));
  auto l = parse_rank_labels("RANK=1\0LOCAL_RANK=\0"s);  // no final NUL is fine too
  ASSERT_TRUE(l);
  EXPECT_EQ(l->rank, 1u);
  EXPECT_FALSE(l->local_rank);
}

}  // namespace
}  // namespace gpureap::procfs

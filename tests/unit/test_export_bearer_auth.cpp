#include <gtest/gtest.h>

#include "export/bearer_auth.h"

namespace gpureap::exporter {
namespace {

TEST(ExportBearerAuth, AcceptsExactlyTheToken) {
  EXPECT_TRUE(bearer_matches("Bearer s3cret", "s3cret"));
  EXPECT_TRUE(bearer_matches("bearer s3cret", "s3cret"));  // the scheme is case-insensitive
  EXPECT_TRUE(bearer_matches("Bearer   s3cret  ", "s3cret"));
}

TEST(ExportBearerAuth, RefusesEverythingElse) {
  EXPECT_FALSE(bearer_matches("", "s3cret"));
  EXPECT_FALSE(bearer_matches("Bearer", "s3cret"));
  EXPECT_FALSE(bearer_matches("Bearer ", "s3cret"));
  EXPECT_FALSE(bearer_matches("Bearer S3CRET", "s3cret"));  // the token is not
  EXPECT_FALSE(bearer_matches("Bearer s3cre", "s3cret"));
  EXPECT_FALSE(bearer_matches("Bearer s3crets", "s3cret"));
  EXPECT_FALSE(bearer_matches("Basic s3cret", "s3cret"));
  EXPECT_FALSE(bearer_matches("Bearers3cret", "s3cret"));
  EXPECT_FALSE(bearer_matches("s3cret", "s3cret"));
  // An empty configured token never matches (a config cannot open the door by accident).
  EXPECT_FALSE(bearer_matches("Bearer ", ""));
}

}  // namespace
}  // namespace gpureap::exporter

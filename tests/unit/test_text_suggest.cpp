#include <gtest/gtest.h>

#include "text/suggest.h"

namespace gpureap::text {
namespace {

TEST(TextSuggest, EditDistance) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("tree", "tree"), 0u);
  EXPECT_EQ(edit_distance("trea", "tree"), 1u);       // substitution
  EXPECT_EQ(edit_distance("doctr", "doctor"), 1u);    // insertion
  EXPECT_EQ(edit_distance("doctoor", "doctor"), 1u);  // deletion
  EXPECT_EQ(edit_distance("tere", "tree"), 1u);       // swapped neighbours
  EXPECT_EQ(edit_distance("", "kill"), 4u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
}

const std::vector<std::string> kSubcommands{"ps",  "kill",   "doctor", "reset", "daemon", "run",
                                            "top", "policy", "audit",  "list",  "report"};
const std::vector<std::string> kPsOptions{"--help",    "--tree",    "--watch", "--no-daemon",
                                          "--gpu",     "--user",    "--pid",   "--sort",
                                          "--compact", "--verbose", "--json",  "--csv"};

TEST(TextSuggest, TyposFindWhatWasMeant) {
  EXPECT_EQ(closest_match("doctr", kSubcommands), "doctor");
  EXPECT_EQ(closest_match("dcotor", kSubcommands), "doctor");
  EXPECT_EQ(closest_match("kil", kSubcommands), "kill");
  EXPECT_EQ(closest_match("reprot", kSubcommands), "report");
  EXPECT_EQ(closest_match("--trea", kPsOptions), "--tree");
  EXPECT_EQ(closest_match("--compcat", kPsOptions), "--compact");
  EXPECT_EQ(closest_match("--no-dae", kPsOptions), "--no-daemon");  // a clear beginning
}

TEST(TextSuggest, NothingCloseSuggestsNothing) {
  EXPECT_FALSE(closest_match("frobnicate", kSubcommands));
  EXPECT_FALSE(closest_match("--lr", kPsOptions));
  EXPECT_FALSE(closest_match("xyz", kSubcommands));
  EXPECT_FALSE(closest_match("", kSubcommands));
  EXPECT_FALSE(closest_match("kill", kSubcommands)) << "a candidate itself is no typo";
  EXPECT_FALSE(closest_match("--trea", {}));
  // Short words allow one edit only: "xx" is two from "ps".
  EXPECT_FALSE(closest_match("xx", kSubcommands));
  // A beginning that fits several names names none.
  EXPECT_FALSE(closest_match("--co", {"--compact", "--config"}));
  EXPECT_FALSE(closest_match(std::string(1000, 'a'), kSubcommands));
}

TEST(TextSuggest, TiesGoToTheFirstListed) {
  EXPECT_EQ(closest_match("--xid", {"--pid", "--gid"}), "--pid");
  EXPECT_EQ(closest_match("--xid", {"--gid", "--pid"}), "--gid");
}

}  // namespace
}  // namespace gpureap::text

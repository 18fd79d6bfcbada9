#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "daemon/config.h"

namespace gpureap::daemon {
namespace {

// The example users copy from docs/config.md must be a valid configuration.
TEST(AlertDocs, TheConfigExampleIsValid) {
  std::ifstream in(std::string(GPUREAP_FIXTURES) + "/../../docs/config.md");
  std::stringstream text;
  text << in.rdbuf();
  std::string doc = text.str();
  size_t section = doc.find("## Alerts");
  ASSERT_NE(section, std::string::npos);
  size_t start = doc.find("```toml\n", section);
  ASSERT_NE(start, std::string::npos);
  start += 8;
  size_t end = doc.find("```", start);
  auto c = parse_config(doc.substr(start, end - start), "docs/config.md");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->alerts.size(), 4u);
  EXPECT_EQ(c->sinks.size(), 4u);
  EXPECT_EQ(c->sinks[3].urls.size(), 2u);
}

}  // namespace
}  // namespace gpureap::daemon

#include <gtest/gtest.h>

#include "export/listen_address.h"

namespace gpureap::exporter {
namespace {

TEST(ExportListenAddress, ParsesIpv4NamesAndBracketedIpv6) {
  EXPECT_EQ(*parse_listen_address("127.0.0.1:9842"), (ListenAddress{"127.0.0.1", 9842}));
  EXPECT_EQ(*parse_listen_address("0.0.0.0:80"), (ListenAddress{"0.0.0.0", 80}));
  EXPECT_EQ(*parse_listen_address("localhost:0"), (ListenAddress{"localhost", 0}));
  EXPECT_EQ(*parse_listen_address("[::1]:9842"), (ListenAddress{"::1", 9842}));
  EXPECT_EQ(parse_listen_address("[::]:9842")->text(), "[::]:9842");
  EXPECT_EQ(parse_listen_address("10.0.0.1:9842")->text(), "10.0.0.1:9842");
}

TEST(ExportListenAddress, RefusesWhatIsNotHostColonPort) {
  for (const char* bad :
       {"", "9842", ":9842", "127.0.0.1", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:-1",
        "127.0.0.1:98a", "::1:9842", "[::1]9842", "[::1", "a b:1"}) {
    auto r = parse_listen_address(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_NE(r.error().hint.find("HOST:PORT"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace gpureap::exporter

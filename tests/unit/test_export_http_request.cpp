// The HTTP request-head parser (src/export/http_request.cpp): what a client controls is parsed
// here, bounded, and malformed input is an answer, not a crash.
#include <gtest/gtest.h>

#include "export/http_request.h"
#include "export/http_server.h"

namespace gpureap::exporter {
namespace {

TEST(HttpRequestHead, ParsesMethodPathQueryAndHeaders) {
  auto h = parse_request_head(
      "GET /api/v1/history?gpu=0&since=10%6d&x=a+b HTTP/1.1\r\nHost: x\r\n"
      "Authorization:  Bearer t0k  \r\n\r\n");
  ASSERT_EQ(h.status, HeadStatus::Complete) << h.error;
  EXPECT_EQ(h.request.method, "GET");
  EXPECT_EQ(h.request.path, "/api/v1/history");
  EXPECT_EQ(h.request.param("gpu"), "0");
  EXPECT_EQ(h.request.param("since"), "10m");
  EXPECT_EQ(h.request.param("x"), "a b");
  EXPECT_FALSE(h.request.param("y"));
  EXPECT_EQ(h.request.header("authorization"), "Bearer t0k");
}

// /api/v1/history's `until` ends the incident's window: the forms of `since`, after it, or a
// 400 that says what to write.
TEST(HistoryQuery, UntilIsATimeAfterSince) {
  auto query = [](const std::string& q) {
    auto h = parse_request_head("GET /api/v1/history?" + q + " HTTP/1.1\r\n\r\n");
    EXPECT_EQ(h.status, HeadStatus::Complete) << h.error;
    return history_request(h.request, std::chrono::hours(1));
  };
  auto both = query("since=1700000000&until=1700000600");
  ASSERT_TRUE(both) << both.error().text();
  EXPECT_EQ(both->since, history::TimePoint(std::chrono::seconds(1700000000)));
  ASSERT_TRUE(both->until);
  EXPECT_EQ(*both->until, history::TimePoint(std::chrono::seconds(1700000600)));
  auto open_ended = query("since=10m");
  ASSERT_TRUE(open_ended);
  EXPECT_FALSE(open_ended->until);
  auto backwards = query("since=1700000600&until=1700000000");
  ASSERT_FALSE(backwards);
  EXPECT_NE(backwards.error().text().find("until must be after since"), std::string::npos);
  EXPECT_FALSE(query("since=10m&until=soon"));
}

TEST(HttpRequestHead, IncompleteUntilTheEmptyLineAndBoundedBeyond) {
  EXPECT_EQ(parse_request_head("GET / HTTP/1.1\r\nHost: x\r\n").status, HeadStatus::Incomplete);
  EXPECT_EQ(parse_request_head("GET / HTTP/1.1\n\n").status, HeadStatus::Complete);
  EXPECT_EQ(parse_request_head(std::string(kMaxRequestHead + 1, 'a')).status, HeadStatus::TooLarge);
}

TEST(HttpRequestHead, MalformedHeadsAreBad) {
  for (const char* bad : {"garbage\r\n\r\n", "GET\r\n\r\n", "GET noslash HTTP/1.1\r\n\r\n",
                          "GET / SPDY/3\r\n\r\n", "G@T / HTTP/1.1\r\n\r\n",
                          "GET / HTTP/1.1\r\n: x\r\n\r\n", "GET / HTTP/1.1\r\nno colon\r\n\r\n"})
    EXPECT_EQ(parse_request_head(bad).status, HeadStatus::Bad) << bad;
}

TEST(HttpRequestHead, UrlDecodingKeepsMalformedEscapes) {
  EXPECT_EQ(url_decode("%41%zz%4", false), "A%zz%4");
  EXPECT_EQ(url_decode("a+b", false), "a+b");
  EXPECT_EQ(url_decode("a+b", true), "a b");
}

TEST(HttpResponse, RenderedWithLengthAndCloseAndNoBodyForHead) {
  HttpResponse r{405, "text/plain", "no\n", {{"Allow", "GET, HEAD"}}};
  auto get = render_response(r, false);
  EXPECT_EQ(get,
            "HTTP/1.1 405 Method Not Allowed\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n"
            "Connection: close\r\nAllow: GET, HEAD\r\n\r\nno\n");
  auto head = render_response(r, true);
  EXPECT_EQ(head.find("no\n"), std::string::npos);
  EXPECT_NE(head.find("Content-Length: 3"), std::string::npos);
}

}  // namespace
}  // namespace gpureap::exporter

// The local socket's protocol between `gpureap ps` and the daemon: strict on both sides.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <nlohmann/json.hpp>

#include "daemon/ps_protocol.h"

namespace gpureap::daemon {
namespace {

std::string refusal(std::string_view line) {
  auto r = parse_request(line);
  EXPECT_FALSE(r.ok()) << line;
  return r.ok() ? "" : r.error().message;
}

TEST(DaemonPsProtocol, RequestRoundTrips) {
  PsRequest r{.format = output::PsFormat::Csv, .tree = true, .width = 132, .color = true};
  std::string line = request_line(r);
  EXPECT_EQ(line.back(), '\n');
  auto back = parse_request(line);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->format, output::PsFormat::Csv);
  EXPECT_TRUE(back->tree);
  EXPECT_EQ(back->width, 132u);
  EXPECT_TRUE(back->color);
  auto plain = parse_request(request_line({}));
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->format, output::PsFormat::Table);
  EXPECT_FALSE(plain->width);
}

TEST(DaemonPsProtocol, OnlyTheCommandIsRequired) {
  auto r = parse_request(R"({"command":"ps"})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->format, output::PsFormat::Table);
  EXPECT_FALSE(r->tree);
  EXPECT_FALSE(r->color);
  EXPECT_FALSE(r->width);
  EXPECT_TRUE(parse_request("{\"command\":\"ps\",\"format\":\"json\",\"width\":null}\n").ok());
}

TEST(DaemonPsProtocol, MalformedRequestsAreRefusedWithWhy) {
  EXPECT_EQ(refusal(""), "bad request: not JSON");
  EXPECT_EQ(refusal("\n"), "bad request: not JSON");
  EXPECT_EQ(refusal("GET / HTTP/1.1"), "bad request: not JSON");
  EXPECT_EQ(refusal("{\"command\":\"ps\""), "bad request: not JSON");
  EXPECT_EQ(refusal("[1,2]"), "bad request: not a JSON object");
  EXPECT_EQ(refusal("{}"), "bad request: no \"command\"");
  EXPECT_EQ(refusal(R"({"command":"kill"})"), "bad request: \"command\" must be \"ps\"");
  EXPECT_EQ(refusal(R"({"command":1})"), "bad request: \"command\" must be \"ps\"");
  EXPECT_EQ(refusal(R"({"command":"ps","format":"xml"})"),
            "bad request: \"format\" must be \"table\", \"json\" or \"csv\"");
  EXPECT_EQ(refusal(R"({"command":"ps","tree":"yes"})"),
            "bad request: \"tree\" must be true or false");
  EXPECT_EQ(refusal(R"({"command":"ps","color":1})"),
            "bad request: \"color\" must be true or false");
  for (const char* width : {"0", "-1", "80.5", "\"80\"", "100000"})
    EXPECT_NE(refusal(std::string(R"({"command":"ps","width":)") + width + "}").find("\"width\""),
              std::string::npos)
        << width;
}

TEST(DaemonPsProtocol, UnknownFieldIsRefusedSoTheClientScans) {
  EXPECT_EQ(refusal(R"({"command":"ps","gpu":0})"), "bad request: unknown field \"gpu\"");
}

TEST(DaemonPsProtocol, OversizedRequestIsRefused) {
  std::string line = R"({"command":"ps","pad":")" + std::string(kMaxRequestBytes, 'x') + "\"}";
  EXPECT_EQ(refusal(line), "bad request: longer than 4096 bytes");
  // Deeply nested brackets are bounded by the same limit, never a deep recursion.
  EXPECT_EQ(refusal(std::string(4000, '[')), "bad request: not JSON");
}

TEST(DaemonPsProtocol, AnswerRoundTrips) {
  PsAnswer a{"out\n\x1b[2mdim\x1b[0m\n", {"gpureap: note: x"}, 420, 4};
  auto back = parse_answer(answer_text(a));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->output, a.output);
  EXPECT_EQ(back->warnings, a.warnings);
  EXPECT_EQ(back->snapshot_age_ms, 420);
  EXPECT_EQ(back->exit_code, 4);
}

TEST(DaemonPsProtocol, RefusalOrMalformedAnswerIsAnError) {
  auto refused = parse_answer(error_text("no sample taken yet"));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message, "no sample taken yet");
  for (const char* text :
       {"", "null", "[]", R"({"ok":"yes"})", R"({"ok":true})",
        R"({"ok":true,"output":1,"warnings":[],"snapshot_age_ms":0,"exit_code":0})",
        R"({"ok":true,"output":"","warnings":[1],"snapshot_age_ms":0,"exit_code":0})",
        R"({"ok":true,"output":"","warnings":[],"snapshot_age_ms":-1,"exit_code":0})",
        R"({"ok":true,"output":"","warnings":[],"snapshot_age_ms":0,"exit_code":300})",
        R"({"ok":true,"output":"","warnings":[],"snapshot_age_ms":0,"exit_code":0)"})
    EXPECT_FALSE(parse_answer(text).ok()) << text;
}

TEST(DaemonPsProtocol, TheEnvironmentNamesTheSocket) {
  const char* saved = std::getenv(kLocalSocketEnv);
  std::string keep = saved ? saved : "";
  ::unsetenv(kLocalSocketEnv);
  EXPECT_EQ(default_local_socket(), "/run/gpureap/gpureap.sock");
  ::setenv(kLocalSocketEnv, "/tmp/other.sock", 1);
  EXPECT_EQ(default_local_socket(), "/tmp/other.sock");
  ::setenv(kLocalSocketEnv, "", 1);
  EXPECT_EQ(default_local_socket(), "");
  if (saved)
    ::setenv(kLocalSocketEnv, keep.c_str(), 1);
  else
    ::unsetenv(kLocalSocketEnv);
}

}  // namespace
}  // namespace gpureap::daemon

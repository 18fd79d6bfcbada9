// The local socket's protocol between gpureap's commands and the daemon: strict on both sides.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <nlohmann/json.hpp>

#include "daemon/local_protocol.h"
#include "document_round_trip.h"
#include "output/evidence_wire.h"
#include "output/snapshot_wire.h"

namespace gpureap::daemon {
namespace {

template <class T>
T as(const core::Result<Request>& r) {
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  if (!r.ok()) return {};
  const T* t = std::get_if<T>(&*r);
  EXPECT_TRUE(t) << "another command";
  return t ? *t : T{};
}

std::string refusal(std::string_view line) {
  auto r = parse_request(line);
  EXPECT_FALSE(r.ok()) << line;
  return r.ok() ? "" : r.error().message;
}

TEST(DaemonLocalProtocol, EvidenceRequestRoundTripsWithThisBuildsVersions) {
  auto r = EvidenceRequest::current(std::chrono::milliseconds(7500));
  EXPECT_EQ(r.evidence, output::kEvidenceWireVersion);
  EXPECT_EQ(r.wire, output::kSnapshotWireVersion);
  std::string line = request_line(r);
  EXPECT_EQ(line.back(), '\n');
  auto back = as<EvidenceRequest>(parse_request(line));
  EXPECT_EQ(back.settle.count(), 7500);
  EXPECT_EQ(back.evidence, r.evidence);
  EXPECT_EQ(back.wire, r.wire);
  as<SnapshotRequest>(parse_request(request_line(SnapshotRequest{})));
  as<ReleasesRequest>(parse_request(request_line(ReleasesRequest{})));
}

// A request of another gpureap version is refused in words that name both versions, never
// answered in a form the other side would misread.
TEST(DaemonLocalProtocol, AnotherVersionsRequestIsRefusedNamingBothVersions) {
  const int wire = output::kSnapshotWireVersion, evidence = output::kEvidenceWireVersion;
  auto line = [&](int e, int w) {
    return R"({"command":"evidence","evidence":)" + std::to_string(e) + R"(,"wire":)" +
           std::to_string(w) + R"(,"settle_ms":0})";
  };
  EXPECT_TRUE(parse_request(line(evidence, wire)).ok());
  EXPECT_EQ(refusal(line(evidence + 1, wire)),
            "bad request: the command reads evidence version " + std::to_string(evidence + 1) +
                ", this daemon writes " + std::to_string(evidence) +
                ": they are different gpureap versions (restart the daemon after an upgrade)");
  EXPECT_NE(
      refusal(line(evidence, wire - 1)).find("reads wire version " + std::to_string(wire - 1)),
      std::string::npos);
  EXPECT_EQ(refusal(R"({"command":"evidence","settle_ms":0})"),
            "bad request: \"evidence\" needs the versions it reads (\"evidence\" and \"wire\")");
  // What an older command asks: refused, saying why; it then scans on its own.
  for (const char* old : {R"({"command":"ps","format":"json"})", R"({"command":"doctor"})"}) {
    auto why = refusal(old);
    EXPECT_NE(why.find("is asked by a gpureap older than this daemon"), std::string::npos) << why;
    EXPECT_TRUE(is_version_refusal(core::Error{why, ""})) << why;
  }
  EXPECT_EQ(
      refusal(line(evidence, wire).substr(0, line(evidence, wire).size() - 1) + R"(,"gpu":0})"),
      "bad request: unknown field \"gpu\"");
  EXPECT_EQ(refusal(R"({"command":"snapshot","tree":true})"),
            "bad request: unknown field \"tree\"");
  EXPECT_EQ(refusal(R"({"command":"releases","since":0})"), "bad request: unknown field \"since\"");
}

TEST(DaemonLocalProtocol, MalformedRequestsAreRefusedWithWhy) {
  EXPECT_EQ(refusal(""), "bad request: not JSON");
  EXPECT_EQ(refusal("\n"), "bad request: not JSON");
  EXPECT_EQ(refusal("GET / HTTP/1.1"), "bad request: not JSON");
  EXPECT_EQ(refusal("{\"command\":\"evidence\""), "bad request: not JSON");
  EXPECT_EQ(refusal("[1,2]"), "bad request: not a JSON object");
  EXPECT_EQ(refusal("{}"), "bad request: no \"command\"");
  const std::string commands =
      "bad request: \"command\" must be \"evidence\", \"snapshot\", \"releases\", "
      "\"history\" or \"announce\"";
  EXPECT_EQ(refusal(R"({"command":"kill"})"), commands);
  EXPECT_EQ(refusal(R"({"command":1})"), commands);
  nlohmann::json slow = nlohmann::json::parse(request_line(EvidenceRequest::current({})));
  slow["settle_ms"] = "5s";
  EXPECT_EQ(refusal(slow.dump()),
            "bad request: \"settle_ms\" must be a number of milliseconds up to 86400000");
}

TEST(DaemonLocalProtocol, OversizedRequestIsRefused) {
  std::string line =
      R"({"command":"evidence","pad":")" + std::string(kMaxRequestBytes, 'x') + "\"}";
  EXPECT_EQ(refusal(line), "bad request: longer than 4096 bytes");
  // Deeply nested brackets are bounded by the same limit, never a deep recursion.
  EXPECT_EQ(refusal(std::string(4000, '[')), "bad request: not JSON");
}

TEST(DaemonLocalProtocol, AnswerRoundTrips) {
  Answer a{"out\n\x1b[2mdim\x1b[0m\n", {"gpureap: note: x"}, 420, 4};
  auto back = parse_answer(answer_text(a));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->output, a.output);
  EXPECT_EQ(back->warnings, a.warnings);
  EXPECT_EQ(back->snapshot_age_ms, 420);
  EXPECT_EQ(back->exit_code, 4);
}

TEST(DaemonLocalProtocol, RefusalOrMalformedAnswerIsAnError) {
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

TEST(DaemonLocalProtocol, TheEnvironmentNamesTheSocket) {
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

namespace gpureap::daemon {
namespace {

TEST(DaemonLocalProtocol, AnnouncementsRoundTripAndStayWithinALine) {
  AnnounceRequest a;
  a.by = "gpureap kill 4242";
  a.signal = "SIGTERM";
  a.reason = "the processes that keep gone PID 4242's memory";
  a.gpu = 0;
  for (pid_t pid = 1000; pid < 1000 + static_cast<pid_t>(kMaxAnnouncedTargets); ++pid)
    a.targets.push_back({pid, 123456789012, std::string(64, '\x01'), 7});
  a.more = 3;
  // Names of control bytes escape to six bytes each: the list is cut to fit, and counted.
  EXPECT_GT(request_line(a).size(), kMaxRequestBytes);
  fit_announcement(a);
  const std::string line = request_line(a);
  EXPECT_LE(line.size(), kMaxRequestBytes) << line.size();
  auto back = as<AnnounceRequest>(parse_request(line));
  EXPECT_EQ(back.by, "gpureap kill 4242");
  EXPECT_EQ(back.signal, "SIGTERM");
  EXPECT_EQ(back.gpu, 0u);
  ASSERT_GE(back.targets.size(), 5u);
  EXPECT_EQ(back.targets[0].pid, 1000);
  EXPECT_EQ(back.targets[0].start_ticks, 123456789012u);
  EXPECT_EQ(back.targets[0].gpu, 7u);
  EXPECT_EQ(back.more, 3 + kMaxAnnouncedTargets - back.targets.size());
  // Plain names: all of them fit.
  AnnounceRequest plain = a;
  plain.targets.assign(kMaxAnnouncedTargets, {4242, 1, "python3.11-work", 0});
  plain.more = 0;
  fit_announcement(plain);
  EXPECT_EQ(plain.targets.size(), kMaxAnnouncedTargets);
  // No user field: the daemon reads the user from the socket, never from the message.
  EXPECT_EQ(refusal(R"({"command":"announce","by":"x","user":"root"})"),
            "bad request: unknown field \"user\"");
  EXPECT_EQ(refusal(R"({"command":"announce","targets":[{"pid":0}]})"),
            "bad request: \"targets\" holds an entry that is not {pid, start_ticks, comm, gpu}");
  auto history =
      as<HistoryRequest>(parse_request(R"({"command":"history","since":"1h","until":"30m"})"));
  EXPECT_EQ(history.until, "30m");
}

}  // namespace
}  // namespace gpureap::daemon

namespace gpureap::daemon {
namespace {

// A request of type T read back from a document; empty when refused or another command.
template <class T>
std::optional<T> request_as(const nlohmann::json& j) {
  auto r = parse_request(j.dump());
  if (!r.ok() || !std::holds_alternative<T>(*r)) return std::nullopt;
  return std::get<T>(*r);
}

// Every field of each request and of the answer set, sent and read back: a field either side
// drops is named, and so is a member the reader never reads.
template <class T>
void expect_request_round_trip(const T& request) {
  const auto doc = nlohmann::json::parse(request_line(request));
  auto back = request_as<T>(doc);
  ASSERT_TRUE(back) << doc.dump();
  gpureap::testing::expect_round_trip(request, *back);
  gpureap::testing::expect_every_member_read(doc, request_as<T>);
}

TEST(DaemonLocalProtocol, EveryFieldOfEveryRequestSurvivesTheRoundTrip) {
  expect_request_round_trip(EvidenceRequest::current(std::chrono::milliseconds(7500)));
  expect_request_round_trip(HistoryRequest{"90m", "2026-05-28T20:26:40Z"});
  expect_request_round_trip(AnnounceRequest{
      "gpureap kill 4242", "SIGTERM", "its keepers", 3, {{4194303, 987654321, "python", 3}}, 2});
}

TEST(DaemonLocalProtocol, EveryFieldOfTheAnswerSurvivesTheRoundTrip) {
  const Answer a{"a table\n", {"a warning"}, 1500, 3};
  auto read = [](const nlohmann::json& j) { return parse_answer(j.dump()); };
  const auto doc = nlohmann::json::parse(answer_text(a));
  auto back = read(doc);
  ASSERT_TRUE(back) << back.error().message;
  gpureap::testing::expect_round_trip(a, *back);
  gpureap::testing::expect_every_member_read(doc, read);
}

}  // namespace
}  // namespace gpureap::daemon

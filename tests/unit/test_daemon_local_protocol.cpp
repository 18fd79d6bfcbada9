// The local socket's protocol between gpureap's commands and the daemon: strict on both sides.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <nlohmann/json.hpp>

#include "daemon/local_protocol.h"

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

TEST(DaemonLocalProtocol, RequestRoundTrips) {
  PsRequest r{.format = output::PsFormat::Csv, .tree = true, .width = 132, .color = true};
  std::string line = request_line(r);
  EXPECT_EQ(line.back(), '\n');
  auto back = as<PsRequest>(parse_request(line));
  EXPECT_EQ(back.format, output::PsFormat::Csv);
  EXPECT_TRUE(back.tree);
  EXPECT_EQ(back.width, 132u);
  EXPECT_TRUE(back.color);
  auto plain = as<PsRequest>(parse_request(request_line(PsRequest{})));
  EXPECT_EQ(plain.format, output::PsFormat::Table);
  EXPECT_FALSE(plain.width);
}

TEST(DaemonLocalProtocol, PsSelectionAndFormTravelWithTheRequest) {
  PsRequest r;
  r.select = {
      .gpus = {0, 3}, .users = {"alice", "1001"}, .pids = {42}, .sort = output::PsSort::Memory};
  r.compact = true;
  r.unicode = false;
  r.verbose = true;
  auto back = as<PsRequest>(parse_request(request_line(r)));
  EXPECT_EQ(back.select.gpus, (std::vector<unsigned>{0, 3}));
  EXPECT_EQ(back.select.users, (std::vector<std::string>{"alice", "1001"}));
  EXPECT_EQ(back.select.pids, (std::vector<pid_t>{42}));
  EXPECT_EQ(back.select.sort, output::PsSort::Memory);
  EXPECT_TRUE(back.compact);
  EXPECT_FALSE(back.unicode);
  EXPECT_TRUE(back.verbose);
  // The render options the daemon applies are the client's.
  auto o = back.render_options();
  EXPECT_EQ(o.select.pids, (std::vector<pid_t>{42}));
  EXPECT_TRUE(o.compact);
  EXPECT_FALSE(o.unicode);
  EXPECT_FALSE(o.daemon_age);
  EXPECT_EQ(refusal(R"({"command":"ps","pids":[0]})"),
            "bad request: \"pids\" must be a list of numbers from 1 to 4194304");
  EXPECT_EQ(refusal(R"({"command":"ps","gpus":"0"})"),
            "bad request: \"gpus\" must be a list of numbers from 0 to 1048576");
  EXPECT_EQ(refusal(R"({"command":"ps","users":[1001]})"),
            "bad request: \"users\" must be a list of user names or uids");
  EXPECT_EQ(refusal(R"({"command":"ps","sort":"cpu"})"),
            "bad request: \"sort\" must be \"pid\", \"memory\", \"age\" or \"user\"");
}

// A MIG instance or UUID travels only when given: a daemon that predates the field refuses the
// request (the client then narrows on its own scan), and a plain request stays one it answers.
TEST(DaemonLocalProtocol, GpuPlacesTravelOnlyWhenGiven) {
  PsRequest plain;
  plain.select.gpus = {0};
  EXPECT_EQ(request_line(plain).find("gpu_places"), std::string::npos) << request_line(plain);
  DoctorRequest doctor{.gpu = 0};
  EXPECT_EQ(request_line(doctor).find("gpu_place"), std::string::npos) << request_line(doctor);

  PsRequest mig;
  mig.select.gpu_places = {"0/3", "MIG-5"};
  auto back = as<PsRequest>(parse_request(request_line(mig)));
  EXPECT_EQ(back.select.gpu_places, (std::vector<std::string>{"0/3", "MIG-5"}));
  EXPECT_EQ(back.render_options().select.gpu_places, back.select.gpu_places);
  DoctorRequest on{.gpu_place = "0/3"};
  auto doctor_back = as<DoctorRequest>(parse_request(request_line(on)));
  EXPECT_EQ(doctor_back.gpu_place, "0/3");
  EXPECT_FALSE(doctor_back.gpu);
  EXPECT_EQ(refusal(R"({"command":"ps","gpu_places":[3]})"),
            "bad request: \"gpu_places\" must be a list of GPU instances (N/G) or UUIDs");
  EXPECT_EQ(refusal(R"({"command":"doctor","gpu_place":""})"),
            "bad request: \"gpu_place\" must be a GPU instance (N/G) or a UUID");
}

TEST(DaemonLocalProtocol, DoctorRequestRoundTrips) {
  DoctorRequest r{.json = true,
                  .gpu = 3,
                  .settle = std::chrono::milliseconds(7500),
                  .only = {"no-such-process", "leaked-memory"},
                  .unattributed_threshold = "2GiB,5%",
                  .color = true,
                  .verbose = true,
                  .width = 80,
                  .unicode = false};
  auto back = as<DoctorRequest>(parse_request(request_line(r)));
  EXPECT_TRUE(back.verbose);
  EXPECT_EQ(back.width, 80u);
  EXPECT_FALSE(back.unicode);
  EXPECT_TRUE(back.json);
  EXPECT_EQ(back.gpu, 3u);
  EXPECT_EQ(back.settle.count(), 7500);
  EXPECT_EQ(back.only, r.only);
  EXPECT_EQ(back.unattributed_threshold, "2GiB,5%");
  EXPECT_TRUE(back.color);
  auto plain = as<DoctorRequest>(parse_request(R"({"command":"doctor"})"));
  EXPECT_FALSE(plain.json);
  EXPECT_FALSE(plain.gpu);
  EXPECT_EQ(plain.settle.count(), 5000);
  EXPECT_TRUE(plain.only.empty());
  EXPECT_FALSE(plain.unattributed_threshold);
  EXPECT_FALSE(plain.verbose);
  EXPECT_FALSE(plain.width);  // a pipe: not wrapped
  as<SnapshotRequest>(parse_request(request_line(SnapshotRequest{})));
  as<ReleasesRequest>(parse_request(request_line(ReleasesRequest{})));
}

TEST(DaemonLocalProtocol, MalformedDoctorRequestsAreRefusedWithWhy) {
  EXPECT_EQ(refusal(R"({"command":"doctor","gpu":-1})"),
            "bad request: \"gpu\" must be null or a GPU index");
  EXPECT_EQ(refusal(R"({"command":"doctor","settle_ms":"5s"})"),
            "bad request: \"settle_ms\" must be a number of milliseconds up to 86400000");
  EXPECT_EQ(refusal(R"({"command":"doctor","only":"leaked-memory"})"),
            "bad request: \"only\" must be a list of finding codes");
  EXPECT_EQ(refusal(R"({"command":"doctor","only":[1]})"),
            "bad request: \"only\" must be a list of finding codes");
  EXPECT_EQ(refusal(R"({"command":"doctor","unattributed_threshold":1})"),
            "bad request: \"unattributed_threshold\" must be null or a string");
  EXPECT_EQ(refusal(R"({"command":"doctor","fix":true})"), "bad request: unknown field \"fix\"");
  EXPECT_EQ(refusal(R"({"command":"snapshot","tree":true})"),
            "bad request: unknown field \"tree\"");
  EXPECT_EQ(refusal(R"({"command":"releases","since":0})"), "bad request: unknown field \"since\"");
}

TEST(DaemonLocalProtocol, OnlyTheCommandIsRequired) {
  auto r = as<PsRequest>(parse_request(R"({"command":"ps"})"));
  EXPECT_EQ(r.format, output::PsFormat::Table);
  EXPECT_FALSE(r.tree);
  EXPECT_FALSE(r.color);
  EXPECT_FALSE(r.width);
  EXPECT_TRUE(parse_request("{\"command\":\"ps\",\"format\":\"json\",\"width\":null}\n").ok());
}

TEST(DaemonLocalProtocol, MalformedRequestsAreRefusedWithWhy) {
  EXPECT_EQ(refusal(""), "bad request: not JSON");
  EXPECT_EQ(refusal("\n"), "bad request: not JSON");
  EXPECT_EQ(refusal("GET / HTTP/1.1"), "bad request: not JSON");
  EXPECT_EQ(refusal("{\"command\":\"ps\""), "bad request: not JSON");
  EXPECT_EQ(refusal("[1,2]"), "bad request: not a JSON object");
  EXPECT_EQ(refusal("{}"), "bad request: no \"command\"");
  const std::string commands =
      "bad request: \"command\" must be \"ps\", \"doctor\", \"snapshot\", \"releases\", "
      "\"history\" or \"announce\"";
  EXPECT_EQ(refusal(R"({"command":"kill"})"), commands);
  EXPECT_EQ(refusal(R"({"command":1})"), commands);
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

TEST(DaemonLocalProtocol, UnknownFieldIsRefusedSoTheClientScans) {
  EXPECT_EQ(refusal(R"({"command":"ps","gpu":0})"), "bad request: unknown field \"gpu\"");
}

TEST(DaemonLocalProtocol, OversizedRequestIsRefused) {
  std::string line = R"({"command":"ps","pad":")" + std::string(kMaxRequestBytes, 'x') + "\"}";
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

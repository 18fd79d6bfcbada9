// `gpureap audit`: the real binary reading audit logs written as the daemon writes them
// (JSON lines, rotated files), with the line format spelled out here independently.
#include <gtest/gtest.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "support.h"

namespace gpureap::testing {
namespace {

using nlohmann::json;

std::string rfc3339(std::chrono::system_clock::time_point t) {
  std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S.000Z", &tm);
  return buf;
}

json action_record(const std::string& time, int pid, const std::string& policy,
                   const std::string& outcome, std::optional<uint64_t> released = std::nullopt) {
  return {{"time", time},
          {"host", "node1"},
          {"event", "action"},
          {"policy", policy},
          {"action", "terminate"},
          {"enforced", true},
          {"outcome", outcome},
          {"process",
           {{"pid", pid},
            {"start_ticks", 12345},
            {"start_time", nullptr},
            {"uid", 1000},
            {"user", "alice"},
            {"comm", "python"},
            {"cmdline", {"python", "train.py", "\x1b]0;pwned\x07"}},
            {"container", nullptr}}},
          {"memory", {{{"gpu", 0}, {"bytes", 8 * GiB}}}},
          {"memory_bytes", 8 * GiB},
          {"released_bytes", released ? json(*released) : json(nullptr)},
          {"reasons", {"no-such-process"}},
          {"attempt", 1},
          {"detail", ""}};
}

void write_log(const std::string& path, const std::vector<std::string>& lines) {
  std::ofstream out(path);
  for (const auto& l : lines) out << l << "\n";
}

std::vector<int> pids_of(const json& doc) {
  std::vector<int> out;
  for (const auto& r : doc["records"]) out.push_back(r["process"]["pid"].get<int>());
  return out;
}

struct Log : TempDir {
  std::string path = file("audit.jsonl");
  Log() {
    write_log(
        path + ".2",
        {action_record("2026-01-01T10:00:00.000Z", 101, "ghosts", "released", 8 * GiB).dump()});
    write_log(path + ".1",
              {action_record("2026-01-01T11:00:00.000Z", 102, "idle", "would-terminate").dump()});
    write_log(
        path,
        {action_record("2026-01-01T12:00:00.000Z", 103, "ghosts", "still-held").dump(),
         action_record("2026-01-01T12:30:00.000Z", 104, "ghosts", "released", 4 * GiB).dump()});
  }
};

TEST(AuditCli, TableOfEveryFileOldestFirst) {
  Log log;
  auto r = run_gpureap({"audit", "--file", log.path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  for (const char* header :
       {"TIME (UTC)", "BY", "ACTION", "OUTCOME", "PID", "USER", "MEMORY", "RELEASED", "COMMAND"})
    EXPECT_NE(r.out.find(header), std::string::npos) << header << "\n" << r.out;
  auto p101 = r.out.find("101"), p102 = r.out.find("102"), p103 = r.out.find("103"),
       p104 = r.out.find("104");
  ASSERT_NE(p104, std::string::npos) << r.out;
  EXPECT_LT(p101, p102);
  EXPECT_LT(p102, p103);
  EXPECT_LT(p103, p104);
  EXPECT_NE(r.out.find("2026-01-01 10:00:00"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("would-terminate"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("alice"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("8.0 GiB"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("python train.py"), std::string::npos) << r.out;
  // The command line came from a process: its escape sequence is shown, not obeyed.
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\\x1b]0;pwned\\x07"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("4 records, 12 GiB released"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2 rotated files"), std::string::npos) << r.out;
}

TEST(AuditCli, JsonDocument) {
  Log log;
  auto r = run_gpureap({"audit", "--file", log.path, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json doc = parse_output(r);
  EXPECT_EQ(doc["schema"], "gpureap.audit/v1");
  EXPECT_EQ(doc["malformed_lines"], 0);
  EXPECT_EQ(pids_of(doc), (std::vector<int>{101, 102, 103, 104}));
  const json& first = doc["records"][0];
  EXPECT_EQ(first["time"], "2026-01-01T10:00:00.000Z");
  EXPECT_EQ(first["released_bytes"], 8 * GiB);
  EXPECT_EQ(first["memory"][0]["bytes"], 8 * GiB);
  EXPECT_EQ(first["process"]["cmdline"][2], "\x1b]0;pwned\x07") << "JSON keeps the exact text";
  EXPECT_TRUE(first["process"]["container"].is_null());
}

TEST(AuditCli, FiltersByPolicyAndPid) {
  Log log;
  auto by_policy = run_json({"audit", "--file", log.path, "--policy", "ghosts", "--json"});
  EXPECT_EQ(pids_of(by_policy), (std::vector<int>{101, 103, 104}));
  auto by_pid = run_json({"audit", "--file", log.path, "--pid", "102", "--json"});
  EXPECT_EQ(pids_of(by_pid), (std::vector<int>{102}));
}

TEST(AuditCli, SinceKeepsTheRecent) {
  TempDir dir;
  std::string path = dir.file("audit.jsonl");
  auto now = std::chrono::system_clock::now();
  write_log(path,
            {action_record(rfc3339(now - std::chrono::hours(3)), 201, "p", "released").dump(),
             action_record(rfc3339(now - std::chrono::minutes(5)), 202, "p", "released").dump()});
  EXPECT_EQ(pids_of(run_json({"audit", "--file", path, "--since", "1h", "--json"})),
            (std::vector<int>{202}));
  EXPECT_EQ(pids_of(run_json({"audit", "--file", path, "--since", "1d", "--json"})),
            (std::vector<int>{201, 202}));
  EXPECT_EQ(pids_of(run_json({"audit", "--file", path, "--since",
                              rfc3339(now - std::chrono::hours(4)), "--json"})),
            (std::vector<int>{201, 202}));
  auto none = run_gpureap({"audit", "--file", path, "--since", "1m"});
  EXPECT_EQ(none.exit_code, 0) << none.err;
  EXPECT_NE(none.out.find("No audit records since 1m"), std::string::npos) << none.out;

  auto bad = run_gpureap({"audit", "--file", path, "--since", "yesterday"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--since yesterday"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("1h"), std::string::npos) << bad.err;
}

TEST(AuditCli, NoLogYetIsNotAnError) {
  TempDir dir;
  std::string path = dir.file("audit.jsonl");
  auto r = run_gpureap({"audit", "--file", path});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("no audit log at " + path + " yet"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("when a cleanup policy acts"), std::string::npos) << r.err;

  auto j = run_gpureap({"audit", "--file", path, "--json"});
  EXPECT_EQ(j.exit_code, 0);
  json doc = parse_output(j);
  EXPECT_EQ(doc["records"], json::array());
  EXPECT_EQ(doc["schema"], "gpureap.audit/v1");
}

TEST(AuditCli, MalformedLinesAreSkippedWithAWarning) {
  TempDir dir;
  std::string path = dir.file("audit.jsonl");
  std::string good = action_record("2026-01-01T10:00:00.000Z", 301, "p", "released").dump();
  write_log(path, {good, good.substr(0, 40), R"({"time":"2026-01-01T10:00:00Z","event":"x"})",
                   action_record("2026-01-01T10:01:00.000Z", 302, "p", "released").dump()});
  auto r = run_gpureap({"audit", "--file", path, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json doc = parse_output(r);
  EXPECT_EQ(doc["malformed_lines"], 2);
  EXPECT_EQ(pids_of(doc), (std::vector<int>{301, 302}));
  EXPECT_NE(r.err.find("skipped 2 malformed lines"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(path + " line 2"), std::string::npos) << r.err;
}

TEST(AuditCli, AnUnreadableLogIsAnError) {
  TempDir dir;
  std::string path = dir.file("audit.jsonl");
  std::filesystem::create_directory(path);
  auto r = run_gpureap({"audit", "--file", path});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("cannot read " + path + ": Is a directory"), std::string::npos) << r.err;
}

TEST(AuditCli, ThePathComesFromTheDaemonConfig) {
  Log log;
  TempDir cfg;
  std::string config = cfg.file("config.toml");
  // The token file is the daemon's: `audit` must not need to read it.
  std::ofstream(config) << "audit_log = \"" << log.path << "\"\n"
                        << "auth_token_file = \"" << cfg.file("no-such-token") << "\"\n";
  EXPECT_EQ(pids_of(run_json({"audit", "--config", config, "--json"})),
            (std::vector<int>{101, 102, 103, 104}));

  std::ofstream(config) << "audit_logg = \"/x\"\n";
  auto bad = run_gpureap({"audit", "--config", config});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("audit_logg"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("--file PATH"), std::string::npos) << bad.err;

  auto missing = run_gpureap({"audit", "--config", cfg.file("nope.toml")});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("cannot read config file"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace gpureap::testing

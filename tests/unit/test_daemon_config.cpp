#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "daemon/config.h"

namespace gpureap::daemon {
namespace {

using namespace std::chrono_literals;

std::string problems(const char* text) {
  auto r = parse_config(text, "test.toml");
  EXPECT_FALSE(r.ok()) << text;
  return r.ok() ? "" : r.error().message;
}

struct TempFile {
  std::string path;
  explicit TempFile(const std::string& content) {
    char tmpl[] = "/tmp/gpureap-config-test-XXXXXX";
    int fd = ::mkstemp(tmpl);
    path = tmpl;
    ::close(fd);
    std::ofstream(path) << content;
  }
  ~TempFile() { std::filesystem::remove(path); }
};

TEST(DaemonConfig, EmptyFileIsTheDocumentedDefaults) {
  auto c = parse_config("", "test.toml");
  ASSERT_TRUE(c.ok()) << c.error().text();
  EXPECT_EQ(c->listen.text(), "127.0.0.1:9842");
  EXPECT_EQ(c->interval, 1s);
  EXPECT_EQ(c->holder_scan_interval, 10s);
  EXPECT_EQ(c->full_scan_interval, 1min);
  EXPECT_EQ(c->history, 1h);
  EXPECT_EQ(c->history_max_processes, 1024u);
  EXPECT_FALSE(c->per_process_metrics);
  EXPECT_FALSE(c->auth_token_file);
  EXPECT_EQ(c->driver_timeout, 5s);
  EXPECT_EQ(c->log_level, base::LogLevel::Info);
  EXPECT_FALSE(c->local_socket);  // the daemon's default_local_socket()
  EXPECT_EQ(c->stalled_job_critical_after, 10min);
  EXPECT_EQ(c->source, "test.toml");
}

TEST(DaemonConfig, EveryKeyIsRead) {
  auto c = parse_config(R"(# a comment
listen = "[::1]:9100"
local_socket = "/run/gpureap-test/ps.sock"
interval = "500ms"
holder_scan_interval = "30s"
full_scan_interval = "5m"
history = "2h"
history_max_processes = 64
per_process_metrics = true
auth_token_file = "/etc/gpureap/token"
driver_timeout = "2s"
log_level = "debug"
stalled_job_critical_after = "30m"
)",
                        "test.toml");
  ASSERT_TRUE(c.ok()) << c.error().text();
  EXPECT_EQ(c->listen.text(), "[::1]:9100");
  EXPECT_EQ(c->local_socket, "/run/gpureap-test/ps.sock");
  EXPECT_EQ(c->interval, 500ms);
  EXPECT_EQ(c->holder_scan_interval, 30s);
  EXPECT_EQ(c->full_scan_interval, 5min);
  EXPECT_EQ(c->history, 2h);
  EXPECT_EQ(c->history_max_processes, 64u);
  EXPECT_TRUE(c->per_process_metrics);
  EXPECT_EQ(c->auth_token_file, "/etc/gpureap/token");
  EXPECT_EQ(c->driver_timeout, 2s);
  EXPECT_EQ(c->log_level, base::LogLevel::Debug);
  EXPECT_EQ(c->stalled_job_critical_after, 30min);
}

TEST(DaemonConfig, UnknownKeyIsAnErrorWithItsLineAndASuggestion) {
  auto p = problems("interval = \"1s\"\n\nintervall = \"2s\"\n");
  EXPECT_NE(p.find("test.toml:3:1: unknown key \"intervall\" (did you mean \"interval\"?)"),
            std::string::npos)
      << p;
  auto far = problems("colour = true\n");
  EXPECT_NE(far.find("test.toml:1:1: unknown key \"colour\" (known keys: listen, interval"),
            std::string::npos)
      << far;
  // A table is an unknown key too: the config is flat.
  auto table = problems("[server]\nlisten = \"0.0.0.0:1\"\n");
  EXPECT_NE(table.find("test.toml:1:"), std::string::npos) << table;
  EXPECT_NE(table.find("unknown key \"server\""), std::string::npos) << table;
}

TEST(DaemonConfig, EveryProblemIsReportedOnItsOwnLine) {
  auto p = problems("interval = 5\nper_process_metrics = \"yes\"\nbogus = 1\n");
  EXPECT_NE(p.find("test.toml:1:12: interval is a duration: write it as a string with a unit"),
            std::string::npos)
      << p;
  EXPECT_NE(p.find("test.toml:2:23: per_process_metrics must be true or false"), std::string::npos)
      << p;
  EXPECT_NE(p.find("test.toml:3:1: unknown key \"bogus\""), std::string::npos) << p;
  EXPECT_EQ(std::count(p.begin(), p.end(), '\n'), 2) << p;
}

TEST(DaemonConfig, ValuesOutOfRangeOrMalformed) {
  EXPECT_NE(problems("interval = \"10ms\"").find("out of range: it must be from 100ms to 1h"),
            std::string::npos);
  EXPECT_NE(problems("interval = \"soon\"").find("test.toml:1:12: interval: "), std::string::npos);
  EXPECT_NE(problems("driver_timeout = \"1d\"").find("driver_timeout"), std::string::npos);
  EXPECT_NE(problems("history_max_processes = 0").find("from 1 to 1000000"), std::string::npos);
  EXPECT_NE(problems("history_max_processes = 1.5").find("whole number"), std::string::npos);
  EXPECT_NE(problems("listen = \"9842\"").find("invalid listen address \"9842\": no port"),
            std::string::npos);
  EXPECT_NE(problems("listen = 9842").find("listen must be a string"), std::string::npos);
  EXPECT_NE(problems("log_level = \"loud\"").find("log_level must be one of"), std::string::npos);
  EXPECT_NE(problems("auth_token_file = \"token\"").find("absolute path"), std::string::npos);
  EXPECT_NE(problems("stalled_job_critical_after = \"0s\"").find("from 1s to 7d"),
            std::string::npos);
}

TEST(DaemonConfig, LocalSocketIsAnAbsolutePathOrNone) {
  auto none = parse_config("local_socket = \"\"", "test.toml");
  ASSERT_TRUE(none.ok()) << none.error().text();
  EXPECT_EQ(none->local_socket, "");
  EXPECT_NE(problems("local_socket = \"gpureap.sock\"")
                .find("test.toml:1:16: local_socket must be an absolute path, or \"\" for none"),
            std::string::npos);
  EXPECT_NE(problems("local_socket = true").find("local_socket must be a string"),
            std::string::npos);
  std::string long_path = "local_socket = \"/" + std::string(107, 'x') + "\"";
  EXPECT_NE(problems(long_path.c_str()).find("longer than 107 bytes"), std::string::npos);
  std::string longest = "local_socket = \"/" + std::string(106, 'x') + "\"";
  EXPECT_TRUE(parse_config(longest, "test.toml").ok());
}

TEST(DaemonConfig, SightingsFileIsAnAbsoluteFilePathOrNone) {
  auto unset = parse_config("", "test.toml");
  ASSERT_TRUE(unset.ok()) << unset.error().text();
  EXPECT_FALSE(unset->sightings_file.has_value());  // beside the local socket
  auto none = parse_config("sightings_file = \"\"", "test.toml");
  ASSERT_TRUE(none.ok()) << none.error().text();
  EXPECT_EQ(none->sightings_file, "");
  auto path = parse_config("sightings_file = \"/var/lib/gpureap/sightings.json\"", "test.toml");
  ASSERT_TRUE(path.ok()) << path.error().text();
  EXPECT_EQ(path->sightings_file, "/var/lib/gpureap/sightings.json");
  for (const char* bad :
       {"sightings_file = \"sightings.json\"", "sightings_file = \"/run/gpureap/\""})
    EXPECT_NE(
        problems(bad).find("sightings_file must be an absolute path to a file, or \"\" for none"),
        std::string::npos)
        << bad;
  EXPECT_NE(problems("sightings_file = 1").find("sightings_file must be a string"),
            std::string::npos);
}

TEST(DaemonConfig, RulesBetweenKeys) {
  EXPECT_NE(
      problems("interval = \"20s\"\nholder_scan_interval = \"10s\"")
          .find(
              "test.toml:2:24: holder_scan_interval (10s) must not be shorter than interval (20s)"),
      std::string::npos);
  EXPECT_NE(problems("holder_scan_interval = \"1m\"\nfull_scan_interval = \"30s\"")
                .find("test.toml:2:22: full_scan_interval (30s) must not be shorter than "
                      "holder_scan_interval (1m00s)"),
            std::string::npos);
  EXPECT_NE(problems("interval = \"10s\"\nhistory = \"5s\"").find("test.toml:2:11: history (5s)"),
            std::string::npos);
}

TEST(DaemonConfig, ScanIntervalsLeftOutFollowTheOnesSet) {
  auto slow = parse_config("interval = \"30s\"", "t");
  ASSERT_TRUE(slow.ok()) << slow.error().text();
  EXPECT_EQ(slow->holder_scan_interval, 30s);
  EXPECT_EQ(slow->full_scan_interval, 1min);
  auto rare = parse_config("holder_scan_interval = \"5m\"", "t");
  ASSERT_TRUE(rare.ok()) << rare.error().text();
  EXPECT_EQ(rare->full_scan_interval, 5min);
}

TEST(DaemonConfig, SyntaxErrorHasItsLine) {
  auto p = problems("interval = \"1s\"\nlisten = \"127.0.0.1:9842\n");
  EXPECT_EQ(p.rfind("test.toml:2:", 0), 0u) << p;
}

TEST(DaemonConfig, DuplicateKeyIsAnError) {
  auto p = problems("interval = \"1s\"\ninterval = \"2s\"\n");
  EXPECT_EQ(p.rfind("test.toml:2:", 0), 0u) << p;
}

TEST(DaemonConfig, EmptyTokenFileNameMeansNoToken) {
  auto c = parse_config("auth_token_file = \"\"", "t");
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->auth_token_file);
}

TEST(DaemonConfig, LoadReadsTheTokenFile) {
  TempFile token("  s3cret-token \n");
  TempFile config("auth_token_file = \"" + token.path + "\"\n");
  auto c = load_config(config.path);
  ASSERT_TRUE(c.ok()) << c.error().text();
  EXPECT_EQ(c->auth_token, "s3cret-token");
  EXPECT_EQ(c->source, config.path);
}

TEST(DaemonConfig, LoadFailsOnAMissingEmptyOrMultiWordTokenFile) {
  TempFile missing_cfg("auth_token_file = \"/nonexistent/gpureap-token\"\n");
  auto missing = load_config(missing_cfg.path);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("cannot read auth_token_file /nonexistent/gpureap-token"),
            std::string::npos);
  EXPECT_NE(missing.error().hint.find("openssl rand"), std::string::npos);
  TempFile empty("\n  \n");
  TempFile empty_cfg("auth_token_file = \"" + empty.path + "\"\n");
  auto e = load_config(empty_cfg.path);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().message.find("is empty"), std::string::npos);
  TempFile two("one two\n");
  EXPECT_FALSE(read_token_file(two.path).ok());
}

TEST(DaemonConfig, LoadOfAMissingFileSaysSo) {
  auto c = load_config("/nonexistent/gpureap.toml");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("cannot read config file /nonexistent/gpureap.toml"),
            std::string::npos);
}

TEST(DaemonConfig, TheShippedExampleConfigIsValid) {
  auto c = load_config(std::string(GPUREAP_FIXTURES) + "/../../deploy/config.toml");
  ASSERT_TRUE(c.ok()) << c.error().text();
}

// The Kubernetes manifest's ConfigMap: its config.toml block (indented under `config.toml: |`)
// is valid, and keeps the sightings where the manifest mounts the node's /run/gpureap, so a new
// pod takes on the last one's.
TEST(DaemonConfig, TheKubernetesManifestsConfigIsValidAndKeepsTheSightingsOnTheNode) {
  std::ifstream in(std::string(GPUREAP_FIXTURES) + "/../../deploy/k8s/daemonset.yaml");
  ASSERT_TRUE(in) << "deploy/k8s/daemonset.yaml";
  std::string toml, manifest;
  bool in_block = false;
  for (std::string line; std::getline(in, line);) {
    manifest += line + "\n";
    if (line.find("config.toml: |") != std::string::npos) {
      in_block = true;
    } else if (in_block) {
      if (line.rfind("    ", 0) != 0 && !line.empty())
        in_block = false;
      else
        toml += (line.empty() ? "" : line.substr(4)) + "\n";
    }
  }
  ASSERT_FALSE(toml.empty()) << manifest;
  auto c = parse_config(toml, "daemonset.yaml");
  ASSERT_TRUE(c.ok()) << c.error().text() << "\n" << toml;
  EXPECT_EQ(c->local_socket, "");
  ASSERT_TRUE(c->sightings_file.has_value()) << toml;
  const std::string dir = c->sightings_file->substr(0, c->sightings_file->rfind('/'));
  EXPECT_NE(manifest.find("mountPath: " + dir + "\n"), std::string::npos) << manifest;
}

}  // namespace
}  // namespace gpureap::daemon

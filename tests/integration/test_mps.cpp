// NVIDIA's Multi-Process Service on real processes: a control daemon and the server it started
// (copies of sleep(1) named nvidia-cuda-mps-control and nvidia-cuda-mps-server, the server
// holding a stand-in of /dev/nvidia0), two clients the NVML test double lists in the compute
// and MPS lists (one alive, one gone) and an unrelated job. The server is shown as such with its
// clients, the gone client is a ghost kept by the server, and no plan ever reaches the server,
// the live client or the job.
#include <grp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "support.h"

namespace gpureap::testing {
namespace {

using nlohmann::json;

// A program `name` in `dir`: a copy of sleep(1), so the process's exe has that name.
std::string sleep_named(const TempDir& dir, const std::string& name) {
  std::string program = dir.file(name);
  std::filesystem::copy_file("/bin/sleep", program);
  ::chmod(program.c_str(), 0755);
  return program;
}

// The control daemon and its server. The daemon forks the server (which opens the GPU's file
// and runs the server program) and then runs the daemon program itself; `server_parent_is_daemon`
// false makes the server's parent a program of another name (a forged server).
struct MpsDaemon {
  TempDir bin;
  std::unique_ptr<Child> control;
  pid_t server = 0;
  KillStrays strays;

  // `log_dir`: the daemon's CUDA_MPS_LOG_DIRECTORY, where it moves its logs ("": none).
  MpsDaemon(const FakeDevRoot& dev, bool server_parent_is_daemon = true,
            const std::string& log_dir = "") {
    const std::string control_program =
        sleep_named(bin, server_parent_is_daemon ? "nvidia-cuda-mps-control" : "job-launcher");
    const std::string server_program = sleep_named(bin, "nvidia-cuda-mps-server");
    Ready ready;
    control = std::make_unique<Child>([&] {
      ::setsid();
      pid_t s = ::fork();
      if (s == 0) {
        hold(dev.dev("nvidia0"));
        ::execl(server_program.c_str(), "nvidia-cuda-mps-server", "infinity", nullptr);
        ::_exit(97);
      }
      ready.send(s);
      if (!log_dir.empty()) ::setenv("CUDA_MPS_LOG_DIRECTORY", log_dir.c_str(), 1);
      ::execl(control_program.c_str(), "nvidia-cuda-mps-control", "infinity", nullptr);
      ::_exit(97);
    });
    server = static_cast<pid_t>(ready.receive());
    strays.pids = {server};
    EXPECT_TRUE(wait_until([&] {
      return runs(server, server_program) && runs(control->pid(), control_program);
    })) << "the MPS daemon and server did not start";
  }
  pid_t daemon() const { return control->pid(); }
};

json scene(pid_t server, pid_t live_client, pid_t gone_client, pid_t job) {
  return {{"gpus",
           {{{"name", "NVIDIA H100"},
             {"uuid", "GPU-0000"},
             {"minor", 0},
             {"total_bytes", 80 * GiB},
             {"processes",
              {{{"pid", server}, {"used_bytes", GiB / 2}, {"kind", "compute"}},
               // Volta and later list a client in both lists ("M+C").
               {{"pid", live_client}, {"used_bytes", 4 * GiB}, {"kind", {"compute", "mps"}}},
               {{"pid", gone_client},
                {"used_bytes", 6 * GiB},
                {"kind", {"compute", "mps"}},
                {"holders", {server}}},
               {{"pid", job}, {"used_bytes", 10 * GiB}}}}},
            {{"name", "NVIDIA H100"},
             {"uuid", "GPU-1111"},
             {"minor", 1},
             {"total_bytes", 80 * GiB},
             {"processes", json::array()}}}}};
}

std::vector<pid_t> sorted_pids(const json& j) {
  auto v = j.get<std::vector<pid_t>>();
  std::sort(v.begin(), v.end());
  return v;
}

class Mps : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_DOUBLE();
    daemon_ = std::make_unique<MpsDaemon>(dev_, true, log_dir());
    client_ = std::make_unique<Child>([] {
      ::prctl(PR_SET_NAME, "mps_client");
      for (;;) ::pause();
    });
    // The job holds its GPU file before any test looks: a listed PID that holds no file of its
    // GPU is not believed to be the listing's owner (on a loaded machine the child may not have
    // opened it yet when the first command runs).
    Ready holding;
    job_ = std::make_unique<Child>([this, &holding] {
      ::setpgid(0, 0);
      hold(dev_.dev("nvidia0"));
      holding.signal();
      for (;;) ::pause();
    });
    holding.wait();
    gone_ = dead_pid();
    nvml_ = std::make_unique<FakeNvml>(scene(daemon_->server, client_->pid(), gone_, job_->pid()));
  }

  void expect_untouched() {
    EXPECT_TRUE(is_alive(daemon_->server));
    EXPECT_TRUE(is_alive(daemon_->daemon()));
    EXPECT_TRUE(is_alive(client_->pid()));
    EXPECT_TRUE(is_alive(job_->pid()));
  }

  std::vector<std::string> env() const { return nvml_->env(); }
  virtual std::string log_dir() const { return ""; }

  FakeDevRoot dev_;
  std::unique_ptr<MpsDaemon> daemon_;
  std::unique_ptr<Child> client_, job_;
  pid_t gone_ = 0;
  std::unique_ptr<FakeNvml> nvml_;
};

TEST_F(Mps, PsJsonShowsTheServerItsClientsAndTheGoneClientKeptByIt) {
  const pid_t server = daemon_->server;
  auto snap = run_json({"ps", "--json", "--dev-root", dev_.path()}, env());

  auto s = row_of(snap, server);
  ASSERT_FALSE(s.is_null()) << snap.dump(2);
  EXPECT_EQ(s["gpus"][0]["serves_clients"], "MPS server");
  EXPECT_EQ(s["gpus"][0]["kind"], "compute");
  EXPECT_EQ(s["gpus"][0]["used_bytes"], GiB / 2) << "its own memory, not its clients'";
  EXPECT_EQ(sorted_pids(s["gpus"][0]["clients"]), sorted_pids(json{client_->pid(), gone_}));
  EXPECT_TRUE(s["anomalies"].empty()) << s.dump(2);

  auto c = row_of(snap, client_->pid());
  EXPECT_EQ(c["gpus"][0]["kind"], "mps") << "listed in both lists, it is an MPS client";
  EXPECT_EQ(c["gpus"][0]["server"], server);
  EXPECT_TRUE(c["gpus"][0]["serves_clients"].is_null());

  auto g = row_of(snap, gone_);
  ASSERT_FALSE(g.is_null()) << snap.dump(2);
  EXPECT_EQ(g["gpus"][0]["kind"], "mps");
  EXPECT_EQ(g["gpus"][0]["server"], server);
  EXPECT_EQ(g["anomalies"], json{"no-such-process"});
  EXPECT_EQ(sorted_pids(g["ghost"]["servers"]), std::vector<pid_t>{server});
  EXPECT_TRUE(g["ghost"]["keepers"].empty()) << "no inherited file keeps a client's context";
  EXPECT_TRUE(g["ghost"]["listed_keepers"].empty());
  EXPECT_EQ(g["ghost"]["leaked"], false);
  EXPECT_TRUE(row_of(snap, job_->pid())["gpus"][0]["server"].is_null());
  EXPECT_EQ(snap["gpus"][0]["memory"]["ghost_bytes"], 6 * GiB);
  EXPECT_EQ(snap["gpus"][0]["memory"]["leaked_bytes"], 0);
}

TEST_F(Mps, PsTextPutsTheClientsUnderTheServerAndSaysWhatHoldsTheGhost) {
  const pid_t server = daemon_->server;
  auto r = run_gpureap({"ps", "--tree", "--no-color", "--dev-root", dev_.path()}, env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("[MPS server · 2 clients]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[client of " + std::to_string(server) + "]"), std::string::npos) << r.out;
  // The tree: the daemon, the server under it, both clients under the server.
  std::vector<std::string> lines;
  for (size_t at = 0; at < r.out.size();) {
    size_t end = r.out.find('\n', at);
    lines.push_back(r.out.substr(at, end - at));
    at = end == std::string::npos ? r.out.size() : end + 1;
  }
  auto line_of = [&](pid_t pid) -> std::string {
    for (const auto& l : lines) {
      auto at = l.find(std::to_string(pid) + " ");
      if (at != std::string::npos && l.find_first_not_of(" |`├└│─", 0) == at) return l;
    }
    return {};
  };
  auto depth = [&](pid_t pid) { return line_of(pid).find(std::to_string(pid)); };
  ASSERT_FALSE(line_of(server).empty()) << r.out;
  ASSERT_FALSE(line_of(gone_).empty()) << r.out;
  EXPECT_GT(depth(gone_), depth(server)) << r.out;
  EXPECT_GT(depth(client_->pid()), depth(server)) << r.out;
  EXPECT_NE(r.out.find("held for gone PID " + std::to_string(gone_) + " by MPS server PID " +
                       std::to_string(server)),
            std::string::npos)
      << r.out;

  auto compact = run_gpureap({"ps", "--compact", "--no-color", "--dev-root", dev_.path()}, env());
  EXPECT_NE(compact.out.find("(" + std::to_string(server) + " MPS server)"), std::string::npos)
      << compact.out;
  EXPECT_NE(compact.out.find("(" + std::to_string(gone_) + " via " + std::to_string(server) + ")"),
            std::string::npos)
      << compact.out;

  auto csv = run_gpureap({"ps", "--csv", "--dev-root", dev_.path()}, env());
  EXPECT_EQ(csv.out.rfind("pid,user,state,", 0), 0u) << csv.out;
  EXPECT_NE(csv.out.find(",work_server,server,command\n"), std::string::npos) << csv.out;
  EXPECT_NE(csv.out.find(",true,MPS server,,nvidia-cuda-mps-server infinity\n"), std::string::npos)
      << csv.out;
  EXPECT_NE(csv.out.find(",true,," + std::to_string(server) + ",(gone)\n"), std::string::npos)
      << csv.out;
}

TEST_F(Mps, DoctorGivesOneFindingWhoseRemedyIsMpsOwn) {
  const pid_t server = daemon_->server;
  auto r = run_gpureap({"doctor", "--json", "--settle", "0s", "--dev-root", dev_.path()}, env());
  auto doc = parse_output(r);
  std::vector<json> about_gone;
  for (const auto& f : doc["findings"])
    if (std::find(f["pids"].begin(), f["pids"].end(), json(gone_)) != f["pids"].end())
      about_gone.push_back(f);
  ASSERT_EQ(about_gone.size(), 1u) << doc["findings"].dump(2);
  const auto& f = about_gone.front();
  EXPECT_EQ(f["code"], "kept-by-server");
  EXPECT_EQ(f["pids"], json({gone_, server}));
  EXPECT_EQ(f["memory_bytes"], 6 * GiB);
  ASSERT_GE(f["steps"].size(), 2u) << f.dump(2);
  EXPECT_EQ(f["steps"][0]["kind"], "run");
  EXPECT_EQ(f["steps"][0]["command"], "echo terminate_client " + std::to_string(server) + " " +
                                          std::to_string(gone_) + " | nvidia-cuda-mps-control");
  EXPECT_EQ(f["steps"][1]["kind"], "or");
  EXPECT_NE(f["steps"][1]["command"].get<std::string>().find("echo quit | nvidia-cuda-mps-control"),
            std::string::npos);
  EXPECT_NE(f["steps"][1]["why"].get<std::string>().find("every client"), std::string::npos);
  for (const auto& other : doc["findings"])
    EXPECT_NE(other["code"], "leaked-memory") << other.dump(2);

  // The text starts with the summary, then the steps to run.
  auto text =
      run_gpureap({"doctor", "--settle", "0s", "--no-color", "--dev-root", dev_.path()}, env());
  EXPECT_NE(text.out.find("kept by MPS server PID " + std::to_string(server)), std::string::npos)
      << text.out;

  // --fix remedies by ending processes: nothing here is one to end.
  auto fixed = run_gpureap(
      {"doctor", "--fix", "--yes", "--json", "--settle", "0s", "--dev-root", dev_.path()}, env());
  expect_untouched();
  EXPECT_EQ(fixed.err.find("SIGTERM"), std::string::npos) << fixed.err;
}

TEST_F(Mps, NoKillPlanReachesTheServerTheLiveClientOrTheJob) {
  const pid_t server = daemon_->server;
  auto ghosts = parse_output(
      run_gpureap({"kill", "--json", "--dry-run", "--ghosts", "--dev-root", dev_.path()}, env()));
  EXPECT_TRUE(planned_pids(ghosts).empty()) << ghosts.dump(2);
  auto notes = ghosts["plan"]["notes"].dump();
  EXPECT_NE(
      notes.find("echo terminate_client " + std::to_string(server) + " " + std::to_string(gone_)),
      std::string::npos)
      << notes;

  // Named, the gone PID's plan is still empty: the server runs every client's work.
  auto named = parse_output(run_gpureap(
      {"kill", "--json", "--dry-run", std::to_string(gone_), "--dev-root", dev_.path()}, env()));
  EXPECT_TRUE(planned_pids(named).empty()) << named.dump(2);
  EXPECT_NE(named["plan"]["notes"].dump().find("gpureap does not end the server"),
            std::string::npos)
      << named.dump(2);

  auto with_tree = parse_output(run_gpureap(
      {"kill", "--json", "--dry-run", "--ghosts", "--tree", "--dev-root", dev_.path()}, env()));
  EXPECT_TRUE(planned_pids(with_tree).empty()) << with_tree.dump(2);
  expect_untouched();
}

TEST_F(Mps, MetricsCountTheServersClientsAndAGhostPolicyEndsNothing) {
  TempDir cfg;
  // An enforced policy on gone PIDs: the gone client's plan has no target.
  std::ofstream(cfg.file("config.toml")) << "interval = \"250ms\"\nenforce = true\n"
                                            "[[policy]]\nname = \"ghosts\"\n"
                                            "anomalies = [\"no-such-process\"]\n"
                                            "action = \"kill\"\n";
  DaemonProcess d({"--config", cfg.file("config.toml"), "--dev-root", dev_.path()}, env());
  ASSERT_GT(d.port(), 0) << d.log();
  const std::string gpu =
      "{gpu=\"0\",uuid=\"GPU-0000\",pci_bus_id=\"00000000:17:00.0\",vendor=\"nvidia\"";
  ASSERT_TRUE(wait_until([&] { return d.metric("gpureap_server_clients" + gpu).has_value(); }))
      << d.get("/metrics").body;
  EXPECT_EQ(d.metric("gpureap_server_clients" + gpu + ",pid=\"" + std::to_string(daemon_->server) +
                     "\",server=\"MPS server\"}"),
            2);
  EXPECT_EQ(d.metric("gpureap_gpu_memory_ghost_bytes" + gpu + "}"), 6.0 * GiB);
  EXPECT_EQ(d.metric("gpureap_findings{code=\"kept-by-server\",severity=\"critical\"}"), 1);
  // Many samples later, with the policy deciding on each, nothing was signalled.
  ASSERT_TRUE(wait_new_samples(d, 10)) << d.log();
  EXPECT_TRUE(d.wait_log("policy ghosts: kill PID " + std::to_string(gone_) + " (gone): refused"))
      << d.log();
  expect_untouched();
}

// Anyone can run a program named nvidia-cuda-mps-server: without the control daemon for
// parent it is no server, and the gone client's memory is judged as any ghost's.
TEST(MpsClaims, AServerNameWithoutTheControlDaemonAboveItIsNoServer) {
  REQUIRE_DOUBLE();
  FakeDevRoot dev;
  MpsDaemon forged(dev, false);
  pid_t gone = dead_pid();
  json processes = {
      {{"pid", forged.server}, {"used_bytes", GiB}},
      {{"pid", gone}, {"used_bytes", 2 * GiB}, {"kind", "mps"}, {"holders", {forged.server}}}};
  json gpu0 = {{"uuid", "GPU-0000"}, {"minor", 0}, {"processes", processes}};
  FakeNvml nvml(json{{"gpus", json::array({gpu0})}});
  auto snap = run_json({"ps", "--json", "--dev-root", dev.path()}, nvml.env());
  auto s = row_of(snap, forged.server);
  ASSERT_FALSE(s.is_null()) << snap.dump(2);
  EXPECT_TRUE(s["gpus"][0]["serves_clients"].is_null()) << s.dump(2);
  auto g = row_of(snap, gone);
  EXPECT_TRUE(g["ghost"]["servers"].empty()) << g.dump(2);
  EXPECT_TRUE(g["gpus"][0]["server"].is_null());
}

// A kernel log at `path` in which `server` hit Xid 31 just after it started.
void write_server_xid(const std::string& path, pid_t server) {
  std::ofstream(path) << "4,1," << started_usec(server) + 500'000
                      << ",-;NVRM: Xid (PCI:0000:17:00): 31, pid=" << server
                      << ", name=nvidia-cuda-mps, Ch 00000008, intr 00000000. MMU "
                         "Fault: ENGINE GRAPHICS\n";
}

// The gpu-xid finding of a doctor run, or null (a test failure).
json xid_finding(const RunResult& r) {
  auto doc = parse_output(r);
  for (const auto& f : doc["findings"])
    if (f["code"] == "gpu-xid") return f;
  ADD_FAILURE() << doc["findings"].dump(2) << r.err;
  return json();
}

// Doctor's gpu-xid finding for an Xid of `server`, with `runtime` as the runtime root.
json xid_of_the_server(pid_t server, const std::string& dev_root, const std::string& runtime,
                       const std::vector<std::string>& env) {
  TempDir logs;
  write_server_xid(logs.file("kmsg"), server);
  return xid_finding(run_gpureap({"doctor", "--json", "--settle", "0s", "--dev-root", dev_root,
                                  "--kmsg", logs.file("kmsg"), "--runtime-root", runtime},
                                 env));
}

// The evidence lines a finding takes from `file` of the MPS logs.
std::vector<std::string> log_evidence(const json& finding, const std::string& file) {
  std::vector<std::string> out;
  if (!finding.contains("evidence")) return out;
  for (const auto& e : finding["evidence"])
    if (e.get<std::string>().rfind(file + ": ", 0) == 0) out.push_back(e.get<std::string>());
  return out;
}

TEST_F(Mps, AnXidOfTheServerIsItsClientsProblemWithTheMpsLogAsEvidence) {
  const pid_t server = daemon_->server;
  TempDir runtime;
  std::filesystem::create_directories(runtime.file("var/log/nvidia-mps"));
  std::ofstream(runtime.file("var/log/nvidia-mps/server.log"))
      << "[2026-12-05 05:00:00.000 Other " << server << "] Server started\n"
      << "[2026-12-05 05:00:01.000 Other " << server << "] \x1b[31mMMU fault\x1b[0m\n";
  const json xid = xid_of_the_server(server, dev_.path(), runtime.path(), env());
  ASSERT_FALSE(xid.is_null());
  EXPECT_EQ(xid["summary"], "MPS server PID " + std::to_string(server) +
                                " on GPU 0 hit Xid 31: its clients' work fails until it "
                                "restarts");
  EXPECT_EQ(xid["severity"], "critical");
  EXPECT_EQ(xid["steps"][0]["command"],
            "echo quit | nvidia-cuda-mps-control && nvidia-cuda-mps-control -d");
  bool log_line = false;
  for (const auto& line : log_evidence(xid, "server.log")) {
    if (line.find("server.log: [2026-12-05 05:00:01.000") == std::string::npos) continue;
    log_line = true;
    EXPECT_EQ(line.find('\x1b'), std::string::npos) << "the log's text is escaped: " << line;
  }
  EXPECT_TRUE(log_line) << xid["evidence"].dump(2);
}

// gpureap's daemon reads the MPS log for its doctor too: through its socket, the same evidence.
TEST_F(Mps, ThroughTheDaemonTheServersXidCarriesTheMpsLogToo) {
  const pid_t server = daemon_->server;
  TempDir runtime, run;
  std::filesystem::create_directories(runtime.file("var/log/nvidia-mps"));
  std::ofstream(runtime.file("var/log/nvidia-mps/server.log"))
      << "[2026-12-05 05:00:01.000 Other " << server << "] MMU fault\n";
  write_server_xid(run.file("kmsg"), server);
  const std::string socket = run.file("gpureap.sock");
  std::ofstream(run.file("config.toml"))
      << "interval = \"200ms\"\nlocal_socket = \"" << socket << "\"\n";
  DaemonProcess d({"--config", run.file("config.toml"), "--dev-root", dev_.path(), "--kmsg",
                   run.file("kmsg"), "--runtime-root", runtime.path()},
                  env());
  ASSERT_TRUE(d.wait_log(kServingLocalSocket + socket)) << d.log();
  ASSERT_TRUE(d.wait_log("first sample taken")) << d.log();  // else doctor scans on its own
  auto client = env();
  client.push_back("GPUREAP_DAEMON_SOCKET=" + socket);
  auto r = run_gpureap({"doctor", "--json", "--settle", "0s"}, client);
  EXPECT_EQ(parse_output(r)["source"]["kind"], "daemon") << r.out << r.err;
  const json xid = xid_finding(r);
  EXPECT_EQ(log_evidence(xid, "server.log"),
            std::vector<std::string>{"server.log: [2026-12-05 05:00:01.000 Other " +
                                     std::to_string(server) + "] MMU fault"})
      << xid.dump(2);
}

// GET `path` of the daemon at `port` from a process of uid and gid 65534 (nobody): any local
// user can ask the daemon's HTTP API what this one does.
HttpResponse http_get_as_nobody(int port, const std::string& path) {
  int fds[2];
  if (::pipe(fds) != 0) return {};
  pid_t child = ::fork();
  if (child == 0) {
    ::close(fds[0]);
    if (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(1);
    auto r = http_get(port, path);
    std::string out = std::to_string(r.status) + "\n" + r.body;
    const char* p = out.data();
    for (size_t left = out.size(); left > 0;) {
      ssize_t n = ::write(fds[1], p, left);
      if (n <= 0) ::_exit(1);
      p += n;
      left -= static_cast<size_t>(n);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string got;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;)
    got.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  ::waitpid(child, nullptr, 0);
  HttpResponse r;
  const size_t nl = got.find('\n');
  if (nl == std::string::npos) return r;
  r.status = std::atoi(got.substr(0, nl).c_str());
  r.body = got.substr(nl + 1);
  return r;
}

// The gpu-xid finding of a findings document that names the MPS server's fault, or null.
json server_xid_in(const std::string& body) {
  auto doc = json::parse(body, nullptr, false);
  if (doc.is_discarded() || !doc.contains("findings")) return json();
  for (const auto& f : doc["findings"])
    if (f["code"] == "gpu-xid" && f["summary"].get<std::string>().rfind("MPS server", 0) == 0)
      return f;
  return json();
}

// The MPS log is root's (mode 0600), and the daemon's HTTP API answers anyone who can connect
// while it has no token (on localhost, by default): such a client, here a process of nobody,
// gets the server's fault without the log's lines, and a client that sends the token gets them.
TEST_F(Mps, TheDaemonGivesTheMpsLogOnlyToClientsWhoCouldReadIt) {
  if (::geteuid() != 0)
    GTEST_SKIP() << "the MPS log must be root's and nobody must be someone else";
  const pid_t server = daemon_->server;
  TempDir runtime, run;
  std::filesystem::create_directories(runtime.file("var/log/nvidia-mps"));
  const std::string log = runtime.file("var/log/nvidia-mps/server.log");
  std::ofstream(log) << "[2026-12-05 05:00:01.000 Other " << server << "] MMU fault\n";
  ::chmod(log.c_str(), 0600);
  write_server_xid(run.file("kmsg"), server);
  const std::string config = run.file("config.toml");
  std::ofstream(config) << "interval = \"200ms\"\n";
  DaemonProcess d({"--config", config, "--dev-root", dev_.path(), "--kmsg", run.file("kmsg"),
                   "--runtime-root", runtime.path()},
                  env());
  ASSERT_GT(d.port(), 0) << d.log();
  json xid;
  ASSERT_TRUE(wait_until([&] {
    xid = server_xid_in(http_get_as_nobody(d.port(), "/api/v1/findings").body);
    return !xid.is_null();
  })) << http_get_as_nobody(d.port(), "/api/v1/findings").body;
  EXPECT_TRUE(log_evidence(xid, "server.log").empty()) << xid.dump(2);
  EXPECT_NE(xid.dump().find("1 line of logs only root can read is left out here"),
            std::string::npos)
      << xid.dump(2);

  // The token, by a reload: its holder gets the lines, and nobody without it gets nothing.
  std::ofstream(run.file("token")) << "s3cret\n";
  ::chmod(run.file("token").c_str(), 0600);
  std::ofstream(config) << "interval = \"200ms\"\nauth_token_file = \"" << run.file("token")
                        << "\"\n";
  d.signal(SIGHUP);
  ASSERT_TRUE(d.wait_log("configuration reloaded")) << d.log();
  auto with_token = d.get("/api/v1/findings", {"Authorization: Bearer s3cret"});
  ASSERT_EQ(with_token.status, 200) << with_token.body;
  xid = server_xid_in(with_token.body);
  EXPECT_EQ(log_evidence(xid, "server.log"),
            std::vector<std::string>{"server.log: [2026-12-05 05:00:01.000 Other " +
                                     std::to_string(server) + "] MMU fault"})
      << xid.dump(2);
  EXPECT_EQ(http_get_as_nobody(d.port(), "/api/v1/findings").status, 401);
}

// A control daemon started with CUDA_MPS_LOG_DIRECTORY logs there: root's daemon is believed.
class MpsMovedLog : public Mps {
  std::string log_dir() const override { return "/srv/mps-logs"; }
};

TEST_F(MpsMovedLog, TheRootDaemonsLogFolderIsWhereItsEnvironmentMovesIt) {
  if (::geteuid() != 0) GTEST_SKIP() << "the daemon must be root's for its folder to count";
  TempDir runtime;
  std::filesystem::create_directories(runtime.file("var/log/nvidia-mps"));
  std::ofstream(runtime.file("var/log/nvidia-mps/control.log")) << "default folder\n";
  std::filesystem::create_directories(runtime.file("srv/mps-logs"));
  std::ofstream(runtime.file("srv/mps-logs/control.log")) << "moved folder\n";
  const json xid = xid_of_the_server(daemon_->server, dev_.path(), runtime.path(), env());
  EXPECT_EQ(log_evidence(xid, "control.log"), std::vector<std::string>{"control.log: moved folder"})
      << xid.dump(2);
}

}  // namespace
}  // namespace gpureap::testing

// `gpureap ps` answered by the daemon over its local socket, and every way that falls back to
// ps's own scan.
#include <gtest/gtest.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "support.h"

namespace gpureap::testing {
namespace {

using nlohmann::json;

json socket_scenario(pid_t job) {
  return {{"gpus",
           {{{"name", "NVIDIA H200"},
             {"uuid", "GPU-sock-0"},
             {"minor", 0},
             {"total_bytes", 80 * GiB},
             {"processes", {{{"pid", job}, {"used_bytes", 4 * GiB}}}}}}}};
}

// A job holding the stand-in nvidia0, listed by the NVML double, and a config that serves the
// local socket at a path of the test's own.
struct Machine {
  FakeDevRoot dev;
  Child job = holding(dev, "nvidia0");
  FakeNvml nvml{socket_scenario(job.pid())};
  TempDir run;
  std::string socket = run.file("gpureap.sock");

  // `extra` may set local_socket itself.
  std::string config(const std::string& extra = "") const {
    std::string path = run.file("config.toml");
    std::ofstream out(path);
    out << "interval = \"250ms\"\n" << extra;
    if (extra.find("local_socket") == std::string::npos)
      out << "local_socket = \"" << socket << "\"\n";
    return path;
  }
  std::vector<std::string> daemon_args(const std::string& extra = "") const {
    return {"--config", config(extra), "--dev-root", dev.path()};
  }
  // A client that would ask the daemon: no roots of its own, the test's socket.
  std::vector<std::string> client_env() const { return {"GPUREAP_DAEMON_SOCKET=" + socket}; }
  // The same machine scanned by ps itself.
  json scan_json() const {
    auto env = nvml.env();
    return run_json({"ps", "--json", "--no-daemon", "--dev-root", dev.path()}, env);
  }
};

// Sends `bytes` on a raw connection to the socket and reads until the daemon closes (or ms
// pass); "" when it cannot connect.
std::string raw_exchange(const std::string& path, const std::string& bytes, int ms = 30000) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return "";
  }
  if (!bytes.empty()) {
    EXPECT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL), ssize_t(bytes.size()));
  }
  std::string out;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    char buf[4096];
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

// Connections to the socket at `path` the daemon has accept()ed and not closed: in
// /proc/net/unix they carry its path, state SS_CONNECTED (03) once a socket of the daemon's
// own is attached (a connection still queued reads SS_CONNECTING).
int accepted_on(const std::string& path) {
  std::ifstream in("/proc/net/unix");
  std::string line;
  int n = 0;
  std::getline(in, line);  // the header
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string num, refs, protocol, flags, type, state, inode, name;
    if (fields >> num >> refs >> protocol >> flags >> type >> state >> inode >> name &&
        name == path && state == "03")
      ++n;
  }
  return n;
}

json parse_answer(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << "not JSON: " << text;
  return j;
}

// What may differ between two documents of the same machine state taken apart in time: when
// and by whom, and each process's figures that grow with the clock (run time, and the CPU %
// computed over it).
void erase_clock_figures(json& j) {
  if (j.is_object()) {
    for (const char* key : {"run_time_seconds", "cpu_percent", "cpu_time_seconds"}) j.erase(key);
    for (auto& [key, value] : j.items()) erase_clock_figures(value);
  } else if (j.is_array()) {
    for (auto& value : j) erase_clock_figures(value);
  }
}

json comparable(json doc) {
  doc.erase("source");
  doc.erase("timestamp");
  erase_clock_figures(doc);
  return doc;
}

bool is_socket(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

TEST(DaemonLocalSocket, PsJsonThroughTheDaemonIsTheScansDocument) {
  REQUIRE_DOUBLE();
  Machine m;
  const auto began = std::chrono::steady_clock::now();
  DaemonProcess d(m.daemon_args(), m.nvml.env());
  ASSERT_TRUE(d.wait_log(kServingLocalSocket + m.socket)) << d.log();
  auto served = run_gpureap({"ps", "--json"}, m.client_env());
  const auto daemon_ran = std::chrono::steady_clock::now() - began;
  ASSERT_EQ(served.exit_code, 0) << served.err;
  EXPECT_EQ(served.err, "");
  auto doc = parse_output(served);
  EXPECT_EQ(doc["source"]["kind"], "daemon") << doc["source"];
  ASSERT_TRUE(doc["source"]["age_ms"].is_number_unsigned()) << doc["source"];
  // The sample's age in milliseconds: no older than the daemon that took it.
  EXPECT_LE(doc["source"]["age_ms"].get<uint64_t>(),
            std::chrono::duration_cast<std::chrono::milliseconds>(daemon_ran).count());
  EXPECT_FALSE(row_of(doc, m.job.pid()).is_null()) << doc.dump(2);

  auto scan = m.scan_json();
  EXPECT_EQ(scan["source"], json({{"kind", "scan"}}));
  EXPECT_EQ(comparable(doc), comparable(scan));
}

TEST(DaemonLocalSocket, PsOptionsAreAppliedByTheDaemonAsByTheScan) {
  REQUIRE_DOUBLE();
  Machine m;
  DaemonProcess d(m.daemon_args(), m.nvml.env());
  ASSERT_TRUE(d.wait_log(kServingLocalSocket + m.socket)) << d.log();
  auto env = m.nvml.env();
  for (const auto& extra : std::vector<std::vector<std::string>>{
           {"--pid", std::to_string(m.job.pid()), "--sort", "memory"},
           {"--pid", "1"},
           {"--gpu", "0", "--user", std::to_string(::getuid())}}) {
    std::vector<std::string> args{"ps", "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto served = run_gpureap(args, m.client_env());
    auto doc = parse_output(served);
    EXPECT_EQ(doc["source"]["kind"], "daemon") << served.out << served.err;
    args.insert(args.end(), {"--no-daemon", "--dev-root", m.dev.path()});
    auto scan = parse_output(run_gpureap(args, env));
    EXPECT_EQ(comparable(doc), comparable(scan)) << extra[0] << " " << extra[1];
  }
  // --pid 1 leaves the job out, through the daemon too.
  auto none = run_json({"ps", "--json", "--pid", "1"}, m.client_env());
  EXPECT_TRUE(row_of(none, m.job.pid()).is_null()) << none.dump(2);
  // The compact form is the scan's, and ends with the daemon's line.
  auto compact = run_gpureap({"ps", "--compact"}, m.client_env());
  auto own = run_gpureap({"ps", "--compact", "--no-daemon", "--dev-root", m.dev.path()}, env);
  ASSERT_EQ(compact.exit_code, 0) << compact.err;
  EXPECT_EQ(compact.out.rfind(own.out.substr(0, own.out.find('\n')), 0), 0u)
      << compact.out << "\n---\n"
      << own.out;
  EXPECT_NE(compact.out.find("(from the gpureap daemon"), std::string::npos) << compact.out;
}

TEST(DaemonLocalSocket, TableEndsWithTheDaemonLine) {
  REQUIRE_DOUBLE();
  Machine m;
  DaemonProcess d(m.daemon_args(), m.nvml.env());
  ASSERT_TRUE(d.wait_log(kServingLocalSocket + m.socket)) << d.log();
  // Above the daemon's line, the table ps prints itself. The job's run time and CPU share move
  // with the clock between the daemon's sample and ps's own (a CPU share needs a second of
  // life), so a second boundary may fall between them: the tables must agree within some tries
  // once the job has a CPU share in the daemon's view, not at the first.
  auto env = m.nvml.env();
  EXPECT_TRUE(wait_until([&] {
    auto row = row_of(run_json({"ps", "--json"}, m.client_env()), m.job.pid());
    return row.is_object() && !row["cpu_percent"].is_null();
  })) << "the daemon's view never gave the job a CPU share";
  RunResult r, own;
  wait_until([&] {  // what differs is shown below
    r = run_gpureap({"ps"}, m.client_env());
    own = run_gpureap({"ps", "--no-daemon", "--dev-root", m.dev.path()}, env);
    return r.out.substr(0, r.out.rfind("(from the gpureap daemon")) == own.out;
  });
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(std::to_string(m.job.pid())), std::string::npos) << r.out;
  EXPECT_TRUE(std::regex_search(
      r.out, std::regex(R"(\n\(from the gpureap daemon, snapshot [0-9]+\.[0-9] s old\)\n$)")))
      << r.out;
  ASSERT_EQ(own.exit_code, 0) << own.err;
  EXPECT_EQ(r.out.substr(0, r.out.rfind("(from the gpureap daemon")), own.out);
  EXPECT_EQ(own.out.find("gpureap daemon"), std::string::npos) << own.out;
  // CSV is unchanged: no line says where it came from.
  auto csv = run_gpureap({"ps", "--csv"}, m.client_env());
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_EQ(csv.out.find("gpureap daemon"), std::string::npos) << csv.out;
  EXPECT_NE(csv.out.find(std::to_string(m.job.pid()) + ","), std::string::npos) << csv.out;
  auto scanned_csv = run_gpureap({"ps", "--csv", "--no-daemon", "--dev-root", m.dev.path()}, env);
  EXPECT_EQ(csv.out, scanned_csv.out);
}

TEST(DaemonLocalSocket, StoppedDaemonRemovesItsSocketAndPsScans) {
  REQUIRE_DOUBLE();
  Machine m;
  DaemonProcess d(m.daemon_args(), m.nvml.env());
  ASSERT_TRUE(d.wait_log(kServingLocalSocket + m.socket)) << d.log();
  ASSERT_TRUE(is_socket(m.socket));
  d.signal(SIGTERM);
  EXPECT_EQ(d.wait_exit(), 0) << d.log();
  EXPECT_FALSE(std::filesystem::exists(m.socket));
  auto env = m.client_env();
  env.push_back("GPUREAP_NVML_LIBRARY=" + kNoNvml);
  auto r = run_gpureap({"ps", "--json"}, env);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(parse_output(r)["source"], json({{"kind", "scan"}}));
}

TEST(DaemonLocalSocket, StaleSocketOfAKilledDaemonIsReplaced) {
  REQUIRE_DOUBLE();
  Machine m;
  {
    DaemonProcess killed(m.daemon_args(), m.nvml.env());
    ASSERT_TRUE(killed.wait_log(kServingLocalSocket + m.socket)) << killed.log();
  }  // SIGKILL: the socket file stays, nothing answers on it
  ASSERT_TRUE(is_socket(m.socket));
  auto env = m.client_env();
  env.push_back("GPUREAP_NVML_LIBRARY=" + kNoNvml);
  auto r = run_gpureap({"ps", "--json"}, env);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(parse_output(r)["source"]["kind"], "scan");

  DaemonProcess d(m.daemon_args(), m.nvml.env());
  ASSERT_TRUE(d.wait_log(kServingLocalSocket + m.socket)) << d.log();
  EXPECT_EQ(run_json({"ps", "--json"}, m.client_env())["source"]["kind"], "daemon");
  // A second daemon on the same path leaves the first one's socket alone.
  DaemonProcess second(m.daemon_args(), m.nvml.env());
  ASSERT_TRUE(second.wait_log("another process serves it")) << second.log();
  EXPECT_EQ(second.get("/healthz").status, 200);
  EXPECT_EQ(run_json({"ps", "--json"}, m.client_env())["source"]["kind"], "daemon");
}

TEST(DaemonLocalSocket, RootOptionsBypassTheDaemon) {
  REQUIRE_DOUBLE();
  Machine m;
  DaemonProcess d(m.daemon_args(), m.nvml.env());
  ASSERT_TRUE(d.wait_log(kServingLocalSocket + m.socket)) << d.log();
  auto env = m.client_env();
  for (const auto& e : m.nvml.env()) env.push_back(e);
  auto doc = run_json({"ps", "--json", "--dev-root", m.dev.path()}, env);
  EXPECT_EQ(doc["source"], json({{"kind", "scan"}}));
  EXPECT_FALSE(row_of(doc, m.job.pid()).is_null());
  // Even a root given with its default value: the user asked for a scan of it.
  EXPECT_EQ(run_json({"ps", "--json", "--proc-root", "/proc"}, env)["source"]["kind"], "scan");
  EXPECT_EQ(run_json({"ps", "--json", "--nvml-library", kNoNvml}, env)["source"]["kind"], "scan");
}

TEST(DaemonLocalSocket, ARegularFileAtThePathIsNeverDeleted) {
  REQUIRE_DOUBLE();
  Machine m;
  std::ofstream(m.socket) << "not a socket\n";
  DaemonProcess d(m.daemon_args(), m.nvml.env());
  ASSERT_TRUE(d.wait_log("exists and is not a socket; gpureap does not remove it")) << d.log();
  EXPECT_EQ(read_text(m.socket), "not a socket\n");
  EXPECT_EQ(d.get("/healthz").status, 200) << "HTTP is unaffected";
  auto env = m.client_env();
  env.push_back("GPUREAP_NVML_LIBRARY=" + kNoNvml);
  auto r = run_gpureap({"ps", "--json"}, env);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(parse_output(r)["source"]["kind"], "scan");
}

TEST(DaemonLocalSocket, ParentIsCreatedAndTheSocketIsOwnerOnly) {
  REQUIRE_DOUBLE();
  Machine m;
  m.socket = m.run.file("sub/gpureap.sock");
  DaemonProcess d(m.daemon_args(), m.nvml.env());
  ASSERT_TRUE(d.wait_log(kServingLocalSocket + m.socket)) << d.log();
  struct stat dir {
  }, sock{};
  ASSERT_EQ(::stat(m.run.file("sub").c_str(), &dir), 0);
  EXPECT_EQ(dir.st_mode & 07777, 0755u);
  ASSERT_EQ(::lstat(m.socket.c_str(), &sock), 0);
  EXPECT_TRUE(S_ISSOCK(sock.st_mode));
  EXPECT_EQ(sock.st_mode & 07777, 0600u);
}

TEST(DaemonLocalSocket, MalformedRequestsGetOkFalse) {
  REQUIRE_DOUBLE();
  Machine m;
  DaemonProcess d(m.daemon_args(), m.nvml.env());
  ASSERT_TRUE(d.wait_log(kServingLocalSocket + m.socket)) << d.log();
  auto garbage = parse_answer(raw_exchange(m.socket, "GET / HTTP/1.1\r\n\r\n"));
  EXPECT_EQ(garbage, json({{"ok", false}, {"error", "bad request: not JSON"}}));
  auto unknown = parse_answer(raw_exchange(m.socket, "{\"command\":\"kill\"}\n"));
  EXPECT_EQ(unknown["ok"], false);
  EXPECT_EQ(unknown["error"],
            "bad request: \"command\" must be \"evidence\", \"snapshot\", \"releases\", "
            "\"history\" or \"announce\"");
  auto oversized = parse_answer(raw_exchange(m.socket, std::string(8192, '{')));
  EXPECT_EQ(oversized["error"], "bad request: longer than 4096 bytes");
  // What an older gpureap asks: refused in words, never answered in a form it would misread.
  auto old = parse_answer(raw_exchange(m.socket, "{\"command\":\"ps\",\"format\":\"csv\"}\n"));
  EXPECT_EQ(old["ok"], false) << old;
  EXPECT_NE(old["error"].get<std::string>().find("older than this daemon"), std::string::npos)
      << old;
  // The daemon is still fine.
  EXPECT_EQ(run_json({"ps", "--json"}, m.client_env())["source"]["kind"], "daemon");
}

// `bytes` sent to the socket from a process in a new PID namespace, as a command in a container
// that mounts the socket would; the daemon's answer, or "" where the namespace cannot be made.
std::string exchange_from_a_child_pid_namespace(const std::string& path, const std::string& bytes) {
  int out[2];
  if (::pipe(out) != 0) return "";
  const pid_t outer = ::fork();
  if (outer == 0) {
    ::close(out[0]);
    if (::unshare(CLONE_NEWPID) != 0) ::_exit(2);
    const pid_t inner = ::fork();  // PID 1 of the new namespace
    if (inner == 0) {
      const std::string answer = raw_exchange(path, bytes);
      ::_exit(::write(out[1], answer.data(), answer.size()) == ssize_t(answer.size()) ? 0 : 3);
    }
    int status = 0;
    ::_exit(inner > 0 && ::waitpid(inner, &status, 0) == inner && WIFEXITED(status)
                ? WEXITSTATUS(status)
                : 4);
  }
  ::close(out[1]);
  std::string answer;
  char buf[4096];
  for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) > 0;) answer.append(buf, size_t(n));
  ::close(out[0]);
  ::waitpid(outer, nullptr, 0);
  return answer;
}

// A command announces the processes it is about to signal, by PID, for the incident journal and
// the audit log. From another PID namespace those numbers name other processes here, or none:
// the daemon refuses the announcement and records nothing; one from its own namespace is
// recorded.
TEST(DaemonLocalSocket, AnnouncementsFromAnotherPidNamespaceAreRefused) {
  REQUIRE_DOUBLE();
  if (::geteuid() != 0) GTEST_SKIP() << "a new PID namespace needs root";
  Machine m;
  DaemonProcess d(m.daemon_args("audit_log = \"" + m.run.file("audit.jsonl") + "\"\n"),
                  m.nvml.env());
  ASSERT_TRUE(d.wait_log(kServingLocalSocket + m.socket)) << d.log();
  auto line = [&](const std::string& reason) {
    return json{{"command", "announce"},
                {"by", "gpureap kill"},
                {"signal", "SIGTERM"},
                {"reason", reason},
                {"gpu", nullptr},
                {"targets",
                 {{{"pid", m.job.pid()}, {"start_ticks", 0}, {"comm", "job"}, {"gpu", 0}}}},
                {"more", 0}}
               .dump() +
           "\n";
  };
  auto foreign = parse_answer(exchange_from_a_child_pid_namespace(m.socket, line("container")));
  EXPECT_EQ(foreign["ok"], false) << foreign;
  EXPECT_EQ(foreign["error"],
            "the announcement comes from another PID namespace than this daemon's: its PIDs name "
            "other processes here, and nothing was recorded")
      << foreign;
  auto own = parse_answer(raw_exchange(m.socket, line("host")));
  EXPECT_EQ(own["ok"], true) << own;
  std::vector<std::string> reasons;
  for (const auto& r : read_json_lines(m.run.file("audit.jsonl")))
    if (r.value("event", "") == "announced") reasons.push_back(r["reasons"].dump());
  EXPECT_EQ(reasons, std::vector<std::string>{R"(["host"])"})
      << read_text(m.run.file("audit.jsonl"));
}

// A daemon of another gpureap version (its socket protocol or its evidence differ) never gives a
// command garbage: the command says so in one line and answers from its own scan.
TEST(DaemonLocalSocket, ADaemonOfAnotherVersionIsSaidAndTheCommandScans) {
  REQUIRE_DOUBLE();
  Machine m;
  auto env = m.client_env();
  for (const auto& e : m.nvml.env()) env.push_back(e);
  const std::string older =
      R"({"ok":false,"error":"bad request: \"command\" must be \"ps\", \"doctor\", \"snapshot\", )"
      R"(\"releases\", \"history\" or \"announce\""})";
  json newer_evidence = {{"ok", true},
                         {"snapshot_age_ms", 5},
                         {"first_kept", true},
                         {"stalled_job_critical_after_ms", 600000},
                         {"evidence", {{"evidence", 1000}, {"last", nullptr}}}};
  for (const std::string& answer : {older, newer_evidence.dump()}) {
    SCOPED_TRACE(answer);
    std::filesystem::remove(m.socket);
    ScriptedSocket other(m.socket, [&](const std::string&) { return answer; });
    auto ps = run_gpureap({"ps", "--json"}, env);
    EXPECT_EQ(ps.exit_code, 0) << ps.err;
    EXPECT_EQ(parse_output(ps)["source"]["kind"], "scan");
    EXPECT_NE(ps.err.find("gpureap: the daemon on " + m.socket + " runs another gpureap version"),
              std::string::npos)
        << ps.err;
    auto doctor = run_gpureap({"doctor", "--json", "--settle", "0s"}, env);
    EXPECT_EQ(parse_output(doctor)["source"]["kind"], "scan") << doctor.out;
    EXPECT_NE(doctor.err.find("runs another gpureap version"), std::string::npos) << doctor.err;
  }
}

TEST(DaemonLocalSocket, SilentClientDelaysNothingButItself) {
  REQUIRE_DOUBLE();
  Machine m;
  DaemonProcess d(m.daemon_args(), m.nvml.env());
  ASSERT_TRUE(d.wait_log(kServingLocalSocket + m.socket)) << d.log();
  // The daemon serves its local socket one connection at a time: once it has taken the silent
  // client's, it waits for a request line up to its deadline (2 s), and HTTP is served
  // meanwhile. A machine too loaded to answer within that deadline shows nothing either way,
  // so the silent client comes again.
  bool served_meanwhile = false;
  std::string answer;
  for (int attempt = 0; attempt < 5 && !served_meanwhile; ++attempt) {
    std::atomic<bool> answered{false};
    std::thread silent([&] {
      answer = raw_exchange(m.socket, "");
      answered = true;
    });
    const bool taken = wait_until([&] { return accepted_on(m.socket) > 0; });
    const int status = d.get("/healthz").status;
    served_meanwhile = taken && status == 200 && !answered;
    silent.join();
    EXPECT_TRUE(taken) << "the daemon never took the silent client's connection";
    EXPECT_EQ(status, 200);
  }
  EXPECT_TRUE(served_meanwhile) << "/healthz waited for the silent client";
  auto j = parse_answer(answer);
  EXPECT_EQ(j["ok"], false);
  EXPECT_EQ(j["error"], "no request line within 2000 ms");
  EXPECT_EQ(run_json({"ps", "--json"}, m.client_env())["source"]["kind"], "daemon");
}

TEST(DaemonLocalSocket, OtherUsersAreNotServed) {
  REQUIRE_DOUBLE();
  if (::geteuid() != 0) GTEST_SKIP() << "needs root";
  if (!binary_runnable_as_nobody()) GTEST_SKIP() << "nobody cannot reach the gpureap binary here";
  Machine m;
  ASSERT_EQ(::chmod(m.run.path().c_str(), 0755), 0);
  DaemonProcess d(m.daemon_args("log_level = \"debug\"\n"), m.nvml.env());
  ASSERT_TRUE(d.wait_log(kServingLocalSocket + m.socket)) << d.log();
  auto env = m.client_env();
  env.push_back("GPUREAP_NVML_LIBRARY=" + kNoNvml);
  // The socket's mode keeps nobody out.
  auto r = run_gpureap_as(65534, 65534, {"ps", "--json"}, env);
  EXPECT_EQ(parse_output(r)["source"]["kind"], "scan") << r.err;
  // Loosened by hand, the peer check still does.
  ASSERT_EQ(::chmod(m.socket.c_str(), 0666), 0);
  r = run_gpureap_as(65534, 65534, {"ps", "--json"}, env);
  EXPECT_EQ(parse_output(r)["source"]["kind"], "scan") << r.err;
  EXPECT_TRUE(d.wait_log("local socket: refused a client of uid 65534")) << d.log();
}

TEST(DaemonLocalSocket, ReloadMovesTheSocket) {
  REQUIRE_DOUBLE();
  Machine m;
  DaemonProcess d(m.daemon_args(), m.nvml.env());
  ASSERT_TRUE(d.wait_log(kServingLocalSocket + m.socket)) << d.log();
  std::string first = m.socket;
  m.socket = m.run.file("moved.sock");
  m.config();  // the same file, now naming the new path
  d.signal(SIGHUP);
  ASSERT_TRUE(d.wait_log(kServingLocalSocket + m.socket)) << d.log();
  EXPECT_FALSE(std::filesystem::exists(first));
  EXPECT_EQ(run_json({"ps", "--json"}, m.client_env())["source"]["kind"], "daemon");
}

TEST(DaemonLocalSocket, EmptyLocalSocketServesNone) {
  REQUIRE_DOUBLE();
  Machine m;
  DaemonProcess d({"--config", m.config("local_socket = \"\"\n"), "--dev-root", m.dev.path()},
                  m.nvml.env());
  EXPECT_EQ(d.get("/healthz").status, 200);
  EXPECT_FALSE(std::filesystem::exists(m.socket));
  EXPECT_EQ(d.log().find("serving `gpureap ps`"), std::string::npos) << d.log();
}

}  // namespace
}  // namespace gpureap::testing

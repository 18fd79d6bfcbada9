// Orphans on real processes: a process is one only when the job that started it is gone. Each
// case's holders have an init or a subreaper for parent; only the ended leader of their group or
// session tells a leftover from a process that init, or a subreaper, started and still runs.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support.h"

namespace gpureap::testing {
namespace {

using nlohmann::json;

bool has_orphan(const json& row) {
  return row["anomalies"].dump().find("\"orphan\"") != std::string::npos;
}

json snapshot_of(const FakeDevRoot& dev) {
  return run_json({"ps", "--json", "--dev-root", dev.path(), "--nvml-library", kNoNvml});
}

std::vector<pid_t> ghosts_planned(const FakeDevRoot& dev) {
  auto plan = parse_output(run_gpureap(kill_args(dev, {"--ghosts", "--dry-run"})));
  std::vector<pid_t> out;
  for (const auto& t : plan["plan"]["targets"]) out.push_back(t["pid"].get<pid_t>());
  return out;
}

bool planned(const std::vector<pid_t>& plan, pid_t pid) {
  return std::find(plan.begin(), plan.end(), pid) != plan.end();
}

// The orphan-holder finding's evidence about `pid`, or "" when doctor finds none.
std::string orphan_evidence(const FakeDevRoot& dev, pid_t pid) {
  auto doc = parse_output(run_gpureap({"doctor", "--json", "--dev-root", dev.path(),
                                       "--nvml-library", kNoNvml, "--settle", "100ms"}));
  for (const auto& f : doc["findings"])
    if (f["code"] == "orphan-holder" && f["pids"] == json::array({pid}))
      return f["evidence"].dump();
  return "";
}

TEST(Orphans, TheChildrenOfAPidNamespacesInitAreNot) {
  // `unshare --pid --fork sh -c '…'`: the shell is PID 1 of the namespace and the parent of
  // every process it starts; they are in its process group and session, which live on.
  if (::geteuid() != 0) GTEST_SKIP() << "a PID namespace needs root";
  FakeDevRoot dev;
  const std::string ctl = dev.dev("nvidiactl");
  Child ns([&] {
    ::execlp("unshare", "unshare", "--pid", "--fork", "--kill-child", "sh", "-c",
             ("(exec 6<" + ctl + "; exec sleep 611) & (exec 6<" + ctl + "; exec sleep 612) & wait")
                 .c_str(),
             nullptr);
    ::_exit(127);
  });
  std::map<std::string, pid_t> p;
  ASSERT_TRUE(wait_until([&] { return (p = sleepers_under(ns.pid())).size() == 2; }))
      << "unshare --pid --fork could not start its shell";
  KillStrays strays{{p["611"], p["612"]}};
  const pid_t init = parent_of(p["611"]);
  ASSERT_NE(init, ns.pid()) << "the shell, not unshare, is their parent";
  auto snap = snapshot_of(dev);
  auto plan = ghosts_planned(dev);
  for (pid_t child : {p["611"], p["612"]}) {
    auto row = row_of(snap, child);
    ASSERT_FALSE(row.is_null()) << snap.dump(2);
    EXPECT_EQ(row["ppid"], init);
    EXPECT_EQ(row["ns_pids"].size(), 2u) << "it runs in the new PID namespace";
    EXPECT_FALSE(has_orphan(row)) << row.dump(2);
    EXPECT_FALSE(planned(plan, child));
  }
}

TEST(Orphans, ADoubleForkedDaemonThatKeepsNoGonePidsContextIsNone) {
  // fork, setsid, fork, exit: the daemon leads nothing, the leader of its group and session is
  // gone, and init is its parent. It left its job on purpose, and keeps no gone PID's memory: no
  // orphan, never planned by --ghosts, no finding.
  FakeDevRoot dev;
  Ready started, forked;
  Child starter([&] {
    pid_t m = ::fork();
    if (m == 0) {
      ::setsid();
      if (::fork() == 0) {
        hold(dev.dev("nvidiactl"));
        hold(dev.dev("nvidia0"));
        started.send(::getpid());
        for (;;) ::pause();
      }
      ::_exit(0);
    }
    forked.send(m);
    ::waitpid(m, nullptr, 0);
  });
  pid_t middle = static_cast<pid_t>(forked.receive());
  pid_t daemonized = static_cast<pid_t>(started.receive());
  KillStrays strays{{daemonized}};
  ASSERT_TRUE(wait_gone(middle));
  auto row = row_of(snapshot_of(dev), daemonized);
  ASSERT_FALSE(row.is_null());
  EXPECT_EQ(row["pgid"], middle);
  EXPECT_EQ(row["sid"], middle);
  EXPECT_FALSE(has_orphan(row)) << row.dump(2);
  EXPECT_EQ(ghosts_planned(dev), std::vector<pid_t>{});
  EXPECT_EQ(orphan_evidence(dev, daemonized), "");
}

TEST(Orphans, NeitherALiveSubreapersChildNorAWorkerOfADeadGroupThatKeepsNothingIs) {
  // A job supervisor (a subreaper leading its own session) started a holder, and a launcher
  // that put itself in a group of its own and died; the launcher's worker came to the subreaper.
  FakeDevRoot dev;
  Ready holders, launched;
  Child supervisor([&] {
    ::setsid();
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    auto hold_and_wait = [&] {
      hold(dev.dev("nvidiactl"));
      holders.send(::getpid());
      for (;;) ::pause();
    };
    pid_t started = ::fork();
    if (started == 0) hold_and_wait();
    pid_t launcher = ::fork();
    if (launcher == 0) {
      ::setpgid(0, 0);
      if (::fork() == 0) hold_and_wait();
      ::_exit(0);
    }
    launched.send(started);
    launched.send(launcher);
    ::waitpid(launcher, nullptr, 0);
  });
  pid_t started = static_cast<pid_t>(launched.receive());
  pid_t launcher = static_cast<pid_t>(launched.receive());
  pid_t first = static_cast<pid_t>(holders.receive()),
        second = static_cast<pid_t>(holders.receive());
  pid_t worker = first == started ? second : first;
  ASSERT_TRUE(wait_gone(launcher));
  KillStrays strays{{started, worker}};
  ASSERT_TRUE(wait_until([&] { return parent_of(worker) == supervisor.pid(); }));
  auto snap = snapshot_of(dev);
  auto plan = ghosts_planned(dev);
  auto child = row_of(snap, started);
  ASSERT_FALSE(child.is_null());
  EXPECT_EQ(child["ppid"], supervisor.pid());
  EXPECT_FALSE(has_orphan(child)) << child.dump(2);
  EXPECT_FALSE(planned(plan, started));
  // The worker of the dead launcher's group keeps no gone PID's memory (no driver lists one):
  // its group's leader merely exited, and it is no orphan either.
  auto reparented = row_of(snap, worker);
  ASSERT_FALSE(reparented.is_null());
  EXPECT_EQ(reparented["ppid"], supervisor.pid());
  EXPECT_FALSE(has_orphan(reparented)) << reparented.dump(2);
  EXPECT_FALSE(planned(plan, worker));
  EXPECT_EQ(plan, std::vector<pid_t>{});
}

}  // namespace
}  // namespace gpureap::testing

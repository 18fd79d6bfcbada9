// `gpureap kill --tree` and `--group` against real process trees and groups.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <set>

#include "support.h"

namespace gpureap::testing {
namespace {

std::set<pid_t> target_pids(const nlohmann::json& doc) {
  std::set<pid_t> out;
  for (const auto& t : doc["plan"]["targets"]) out.insert(t["pid"].get<pid_t>());
  return out;
}

bool has_reason(const nlohmann::json& target, const std::string& kind, pid_t pid) {
  for (const auto& r : target["reasons"])
    if (r["kind"] == kind && r["pid"] == pid) return true;
  return false;
}

TEST(KillTree, TreeKillsTheHolderAndItsDescendants) {
  FakeDevRoot dev;
  Ready ready, grandchild_ready;
  Child parent([&] {
    ::setpgid(0, 0);
    hold(dev.dev("nvidia0"));
    pid_t child = ::fork();
    if (child == 0) {
      if (::fork() == 0) {
        ::setpgid(0, 0);  // a group of its own: only --tree reaches it
        grandchild_ready.send(::getpid());
        for (;;) ::pause();
      }
      for (;;) ::pause();
    }
    ready.send(child);
  });
  pid_t child = static_cast<pid_t>(ready.receive());
  pid_t grandchild = static_cast<pid_t>(grandchild_ready.receive());
  KillStrays strays{{child, grandchild}};
  auto r = run_gpureap(kill_args(dev, {std::to_string(parent.pid()), "--tree", "--yes"}));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  auto doc = parse_output(r);
  EXPECT_EQ(target_pids(doc), (std::set<pid_t>{parent.pid(), child, grandchild}));
  EXPECT_TRUE(has_reason(entry_of(doc["plan"]["targets"], grandchild), "descendant", parent.pid()));
  for (pid_t pid : {parent.pid(), child, grandchild}) {
    EXPECT_EQ(entry_of(doc["outcomes"], pid)["outcome"], "released") << pid;
    EXPECT_FALSE(is_alive(pid)) << pid;
  }
  EXPECT_EQ(end_signal(parent.pid()), SIGTERM);
}

TEST(KillTree, AJobNamedAloneIsToldBeforehandThatItsWorkersKeepItsMemory) {
  // A job the driver lists, whose two workers inherited its GPU file: killing it alone frees
  // nothing. The plan says so before anything is signalled, with the option that includes them,
  // and the outcome names them without waiting for a release that cannot come.
  REQUIRE_DOUBLE();
  FakeDevRoot dev;
  Ready workers;
  Child job([&] {
    hold(dev.dev("nvidia0"));
    for (int i = 0; i < 2; ++i)
      if (::fork() == 0) {
        workers.send(::getpid());
        for (;;) ::pause();
      }
    for (;;) ::pause();
  });
  const pid_t w1 = static_cast<pid_t>(workers.receive()),
              w2 = static_cast<pid_t>(workers.receive());
  KillStrays strays{{w1, w2}};
  nlohmann::json gpu0 = {
      {"name", "NVIDIA H200"},
      {"uuid", "GPU-0000"},
      {"minor", 0},
      {"total_bytes", 80ull << 30},
      {"processes",
       {{{"pid", job.pid()}, {"used_bytes", 12ull << 30}, {"holders", {job.pid(), w1, w2}}}}}};
  FakeNvml nvml(nlohmann::json{{"gpus", {gpu0}}});
  const std::string job_pid = std::to_string(job.pid());
  auto dry = run_gpureap(gpu_kill_args(dev, {job_pid, "--dry-run"}), nvml.env());
  auto planned = parse_output(dry);
  EXPECT_EQ(planned_pids(planned), std::vector<pid_t>{job.pid()});
  const std::string notes = planned["plan"]["notes"].dump();
  EXPECT_NE(notes.find("PID " + job_pid + "'s GPU memory stays held while PIDs " +
                       std::to_string(std::min(w1, w2)) + " " + std::to_string(std::max(w1, w2)) +
                       " share its GPU files (its workers); to free it, add --tree"),
            std::string::npos)
      << notes;
  // The text plan says it too, before the confirmation.
  auto text = run_gpureap({"kill", "--dry-run", "--dev-root", dev.path(), job_pid}, nvml.env());
  EXPECT_NE((text.out + text.err).find("share its GPU files"), std::string::npos)
      << text.out << text.err;

  // A release wait far longer than the test may take: the outcome is certain, nothing waits.
  auto r = run_gpureap(gpu_kill_args(dev, {job_pid, "--yes", "--wait-release", "10m"}), nvml.env());
  auto doc = parse_output(r);
  EXPECT_EQ(planned_pids(doc), std::vector<pid_t>{job.pid()});
  auto outcome = entry_of(doc["outcomes"], job.pid());
  EXPECT_EQ(outcome["outcome"], "still-held") << outcome.dump(2);
  EXPECT_FALSE(is_alive(job.pid()));
  for (pid_t w : {w1, w2}) {
    EXPECT_TRUE(is_alive(w)) << w;
    EXPECT_NE(outcome.dump().find(std::to_string(w)), std::string::npos) << outcome.dump(2);
  }
}

TEST(KillTree, GroupReachesMembersOutsideTheTree) {
  FakeDevRoot dev;
  Ready ready;
  Child leader([&] {
    ::setpgid(0, 0);
    hold(dev.dev("nvidia0"));
    pid_t direct = ::fork();
    if (direct == 0)
      for (;;) ::pause();
    ready.send(direct);
    // A worker whose parent exits: reparented, no longer a descendant, still in the group.
    int pipe_fds[2];
    if (::pipe(pipe_fds) != 0) ::_exit(90);
    pid_t middle = ::fork();
    if (middle == 0) {
      pid_t stray = ::fork();
      if (stray == 0)
        for (;;) ::pause();
      if (::write(pipe_fds[1], &stray, sizeof stray) != sizeof stray) ::_exit(91);
      ::_exit(0);
    }
    pid_t stray = 0;
    if (::read(pipe_fds[0], &stray, sizeof stray) != sizeof stray) ::_exit(92);
    ::waitpid(middle, nullptr, 0);
    ready.send(stray);
  });
  pid_t direct = static_cast<pid_t>(ready.receive());
  pid_t stray = static_cast<pid_t>(ready.receive());
  KillStrays strays{{direct, stray}};
  ASSERT_NE(stray, 0);

  auto tree = parse_output(
      run_gpureap(kill_args(dev, {std::to_string(leader.pid()), "--tree", "--dry-run"})));
  EXPECT_EQ(target_pids(tree), (std::set<pid_t>{leader.pid(), direct}));

  auto r = run_gpureap(kill_args(dev, {std::to_string(leader.pid()), "--group", "--yes"}));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  auto doc = parse_output(r);
  EXPECT_EQ(target_pids(doc), (std::set<pid_t>{leader.pid(), direct, stray}));
  auto stray_target = entry_of(doc["plan"]["targets"], stray);
  EXPECT_TRUE(has_reason(stray_target, "process-group", leader.pid())) << stray_target.dump();
  EXPECT_EQ(stray_target["pgid"], leader.pid());
  for (pid_t pid : {leader.pid(), direct, stray}) {
    EXPECT_EQ(entry_of(doc["outcomes"], pid)["outcome"], "released") << pid;
    EXPECT_FALSE(is_alive(pid)) << pid;
  }
}

}  // namespace
}  // namespace gpureap::testing

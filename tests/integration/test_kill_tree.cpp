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

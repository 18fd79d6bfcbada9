// The rules that decide what may be signalled.
#include <gtest/gtest.h>
#include <unistd.h>

#include "reap/planner.h"
#include "reap/safety.h"
#include "snapshot_builders.h"

namespace gpureap::reap {
namespace {

using namespace gpureap::testing;

Caller caller(uid_t uid = 0) {
  Caller c;
  c.self = 60000;
  c.pgid = 60000;
  c.ancestors = {59999, 59000, 1};
  c.uid = c.euid = uid;
  return c;
}

Target judged(const core::HostProcess& p, bool named, const Caller& c = caller()) {
  Target t;
  t.pid = p.stat.pid;
  t.comm = p.stat.comm;
  t.cmdline = p.details ? p.details->cmdline : std::vector<std::string>{};
  t.uid = p.details ? p.details->uid : std::nullopt;
  t.user = p.details ? p.details->user : std::nullopt;
  t.protected_process = is_protected_process(p);
  if (named)
    t.reasons.push_back({ReasonKind::Named});
  else
    t.reasons.push_back({ReasonKind::HoldsDevice, 0u});
  judge(t, p, c);
  return t;
}

core::HostProcess named_proc(pid_t pid, const std::string& comm, const std::string& argv0 = "") {
  auto p = holder(pid, 1, pid);
  p.stat.comm = comm;
  p.details->cmdline = {argv0.empty() ? "/usr/bin/" + comm : argv0, "--flag"};
  return p;
}

// Details of a process whose program could not be read: only its uid and command line.
std::optional<core::ProcessDetails> unread(uid_t uid, std::vector<std::string> cmdline = {}) {
  core::ProcessDetails d;
  d.uid = uid;
  d.cmdline = std::move(cmdline);
  return d;
}

std::optional<core::ProcessDetails> running(const std::string& exe, bool system_installed,
                                            uid_t uid = 1000) {
  auto d = unread(uid, {exe});
  d->exe = core::ExecutableFile{exe, system_installed};
  return d;
}

TEST(ReapSafety, WithoutItsProgramANameProtectsOnlyAProcessOfTheSystem) {
  EXPECT_TRUE(is_protected("Xorg", unread(0)));
  EXPECT_TRUE(is_protected("gnome-shell", unread(120, {"/usr/bin/gnome-shell"})));
  EXPECT_TRUE(is_protected("nvidia-persiste", unread(0)));  // the kernel keeps 15 bytes of a name
  EXPECT_TRUE(is_protected("whatever", unread(0, {"/usr/bin/nv-hostengine", "-n"})));
  EXPECT_TRUE(is_protected("python3", unread(0, {"/opt/dcgm-exporter"})));
  EXPECT_FALSE(is_protected("python3", unread(0, {"python3", "train.py"})));
  EXPECT_FALSE(is_protected("Xorgish", unread(0)));
  EXPECT_FALSE(is_protected("nvidia-persis", unread(0)));  // a shorter name is not a truncation
  EXPECT_FALSE(is_protected("sh", unread(0, {"sh", "-c", "Xorg"})));
  // A user's process that calls itself Xorg, by prctl or argv[0], is that user's process.
  EXPECT_FALSE(is_protected("Xorg", unread(1000)));
  EXPECT_FALSE(is_protected("python3", unread(1000, {"nvidia-persistenced"})));
  EXPECT_FALSE(is_protected("Xorg", std::nullopt));
}

TEST(ReapSafety, TheProgramItRunsDecidesWhenItCanBeRead) {
  EXPECT_TRUE(is_protected("Xorg", running("/usr/lib/xorg/Xorg", true)));
  EXPECT_TRUE(is_protected("gdm3", running("/usr/sbin/gdm3", true, 0)));
  EXPECT_TRUE(is_protected("nvidia-persiste", running("/usr/bin/nvidia-persistenced", true, 0)));
  // A copy or a link the user made is not system-installed, whatever its name.
  EXPECT_FALSE(is_protected("nvidia-persiste", running("/home/u/nvidia-persistenced", false)));
  // A real system program started under a protected name (exec -a Xorg python3) is not Xorg.
  EXPECT_FALSE(is_protected("Xorg", running("/usr/bin/python3", true, 0)));
}

TEST(ReapSafety, ProtectedProcessIsRefusedUnlessNamed) {
  auto p = named_proc(700, "nvidia-persiste", "/usr/bin/nvidia-persistenced");
  auto found = judged(p, false);
  EXPECT_EQ(found.action, Action::Refused);
  EXPECT_NE(found.refusal.find("protected"), std::string::npos);
  EXPECT_EQ(judged(p, true).action, Action::Signal);
}

TEST(ReapSafety, NeverSignalledEvenWhenNamed) {
  EXPECT_EQ(judged(proc(1, 0, 1), true).action, Action::Refused);
  auto kthread = proc(2, 0, 0);
  kthread.stat.flags = 0x00200000;
  EXPECT_EQ(judged(kthread, true).action, Action::Refused);
  EXPECT_EQ(judged(proc(60000, 59999, 60000), true).action, Action::Refused);  // gpureap
  auto ancestor = judged(proc(59000, 1, 59000), true);
  EXPECT_EQ(ancestor.action, Action::Refused);
  EXPECT_NE(ancestor.refusal.find("ancestor"), std::string::npos);
}

TEST(ReapSafety, ZombieIsNotSignalled) {
  auto z = judged(proc(800, 700, 700, 'Z'), true);
  EXPECT_EQ(z.action, Action::Zombie);
}

TEST(ReapSafety, OtherUsersProcessesAreNotPermittedWithoutRoot) {
  auto theirs = holder(900, 1, 900);
  theirs.details->uid = 1001;
  theirs.details->user = "bob";
  auto mine = holder(901, 1, 901);
  mine.details->uid = 1000;
  auto refused = judged(theirs, true, caller(1000));
  EXPECT_EQ(refused.action, Action::NotPermitted);
  EXPECT_NE(refused.refusal.find("bob"), std::string::npos);
  EXPECT_EQ(judged(mine, true, caller(1000)).action, Action::Signal);
  EXPECT_EQ(judged(theirs, true, caller(0)).action, Action::Signal);
}

TEST(ReapSafety, SnapshotAncestorsWalkTheSnapshotsParents) {
  pid_t self = ::getpid();
  auto me = proc(self, 4000, 4000);
  auto s = make_snapshot({proc(1, 0, 1), proc(3000, 1, 3000), proc(4000, 3000, 4000), me}, {});
  auto ancestors = own_ancestors(s);
  EXPECT_EQ(ancestors.front(), ::getppid());
}

// The caller's ancestors come from /proc now, not from a snapshot that may predate them.
class StaleSnapshotProbe final : public ProcessProbe {
 public:
  core::Result<std::optional<core::ProcessStat>> stat(pid_t pid) const override {
    core::ProcessStat st;
    st.pid = pid;
    st.ppid = pid == ::getppid() ? 59000 : 1;
    return std::optional<core::ProcessStat>(st);
  }
  std::optional<core::ProcessDetails> details(pid_t, bool) const override { return std::nullopt; }
  std::optional<pid_t> thread_group_of(pid_t) const override { return std::nullopt; }
};

TEST(ReapSafety, CallerKnowsItsAncestorsFromProcNotFromTheSnapshot) {
  Caller c = current_caller(StaleSnapshotProbe());
  EXPECT_EQ(c.self, ::getpid());
  EXPECT_EQ(c.ancestors, (std::vector<pid_t>{::getppid(), 59000, 1}));
}

TEST(ReapSafety, PlanRefusesAnAncestorFoundThroughTheTree) {
  // A --tree kill of init's child must not reach gpureap's own ancestors.
  auto s = make_snapshot({proc(1, 0, 1), holder(59000, 1, 59000), proc(59999, 59000, 59999)},
                         {gpu(0, 0, 0, {})});
  auto p = make_plan(s, {.pids = {59000}, .tree = true}, caller(),
                     [](const core::HostProcess&) { return std::nullopt; });
  ASSERT_TRUE(p.ok());
  ASSERT_EQ(p->targets.size(), 2u);
  EXPECT_EQ(p->count(Action::Signal), 0u);
  EXPECT_EQ(p->count(Action::Refused), 2u);
}

}  // namespace
}  // namespace gpureap::reap

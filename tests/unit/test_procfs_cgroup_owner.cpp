// procfs::cgroup_ownership: who owns a cgroup and every cgroup above it, in cgroup trees laid
// out as the kernel lays them out (container_machine.h), on cgroup v2, hybrid and v1 layouts.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "container_machine.h"
#include "procfs/cgroup_owner.h"

namespace gpureap::procfs {
namespace {

using testing::ContainerMachine;
using Verdict = CgroupOwnership::Verdict;

const std::string kScope =
    "/system.slice/docker-9c3f2d8e1a7b4c6d5e0f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d.scope";

std::string describe(const CgroupOwnership& o) {
  const char* v = o.verdict == Verdict::RootOwned   ? "root-owned"
                  : o.verdict == Verdict::Delegated ? "delegated"
                                                    : "unseen";
  return o.why.empty() ? v : std::string(v) + ": " + o.why;
}

class CgroupOwner : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "handing a cgroup to a user needs root";
  }
  std::string owner(const std::string& cgroup, const std::string& hierarchy = "") {
    return describe(cgroup_ownership(m_.cgroup_fs(), hierarchy, cgroup));
  }
  ContainerMachine m_;
};

TEST_F(CgroupOwner, RootsCgroupAllTheWayUp) {
  m_.make_cgroup(kScope);
  EXPECT_EQ(owner(kScope), "root-owned");
}

TEST_F(CgroupOwner, AUserManagersSubtreeIsDelegatedByItsNameAlone) {
  // Even where root made every directory: what lies below user@ is the user's to name.
  const std::string forged =
      "/user.slice/user-1000.slice/user@1000.service/app.slice" + kScope.substr(kScope.rfind('/'));
  m_.make_cgroup(forged);
  EXPECT_EQ(owner(forged), "delegated: cgroup " + forged +
                               " lies in user@1000.service, the subtree systemd delegates to "
                               "that user");
}

TEST_F(CgroupOwner, TheTopUserOwnedCgroupIsNamed) {
  m_.make_cgroup("/system.slice/ci.service", 65534);
  const std::string below = "/system.slice/ci.service/job" + kScope.substr(kScope.rfind('/'));
  m_.make_cgroup(below, 65534);
  EXPECT_EQ(owner(below),
            "delegated: cgroup /system.slice/ci.service belongs to uid 65534, who "
            "may create and name any cgroup below it");
}

TEST_F(CgroupOwner, AMissingCgroupOrOneOutsideTheNamespaceIsUnseen) {
  EXPECT_EQ(owner(kScope), "unseen: no cgroup /system.slice under " + m_.cgroup_fs() +
                               " (gpureap sees another cgroup namespace, or the cgroup is gone)");
  EXPECT_EQ(owner("/.." + kScope),
            "unseen: cgroup /.." + kScope + " lies outside gpureap's cgroup namespace");
  EXPECT_EQ(owner("/system.slice/../x"), "unseen: cgroup /system.slice/../x is not a plain path");
}

TEST_F(CgroupOwner, ALinkIsNotACgroup) {
  // The cgroup filesystem has no links: one in its place was put there by someone else.
  m_.make_cgroup("/system.slice");
  std::filesystem::create_directories(m_.path("elsewhere"));
  std::filesystem::create_symlink(m_.path("elsewhere"), m_.cgroup_fs() + kScope);
  EXPECT_EQ(owner(kScope), "unseen: no cgroup " + kScope + " under " + m_.cgroup_fs() +
                               " (gpureap sees another cgroup namespace, or the cgroup is gone)");
}

TEST_F(CgroupOwner, HybridAndV1Hierarchies) {
  // Hybrid: cgroup v2 at unified/, beside v1's controllers; no cgroup.controllers at the top.
  std::filesystem::remove(m_.cgroup_fs() + "/cgroup.controllers");
  ContainerMachine::make_cgroup_tree(m_.cgroup_fs() + "/unified", kScope);
  EXPECT_EQ(owner(kScope), "root-owned");
  // v1: each hierarchy at its controllers' folder; a named one at its name.
  ContainerMachine::make_cgroup_tree(m_.cgroup_fs() + "/systemd", "/docker/x");
  ContainerMachine::make_cgroup_tree(m_.cgroup_fs() + "/cpu,cpuacct", "/docker/y");
  EXPECT_EQ(owner("/docker/x", "name=systemd"), "root-owned");
  EXPECT_EQ(owner("/docker/y", "cpu,cpuacct"), "root-owned");
  EXPECT_EQ(owner("/docker/x", "memory"),
            "unseen: cannot open " + m_.cgroup_fs() + "/memory: No such file or directory");
  EXPECT_EQ(owner("/docker/x", "name=../x"),
            "unseen: no cgroup hierarchy is mounted for "
            "\"name=../x\"");
}

TEST_F(CgroupOwner, AFileThatListedAHierarchyTwiceLocatesNothing) {
  EXPECT_EQ(owner(""),
            "delegated: its /proc/PID/cgroup lists a hierarchy twice: a cgroup's "
            "name holds a line break");
}

}  // namespace
}  // namespace gpureap::procfs

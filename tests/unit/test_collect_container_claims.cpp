// collect/container_claims: a process belongs to the container its cgroup's name claims only
// when the kernel (who owns the cgroup) and the runtime's state (its init PID) agree. Real
// processes of a machine's tree (container_machine.h): the victim's container run by root, and
// uid 65534 forging its cgroup's name in the subtree every logged-in user is given.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <string>

#include "collect/collector.h"
#include "container_machine.h"

namespace gpureap::collect {
namespace {

using testing::ContainerMachine;

using namespace testing::forgery;

class ContainerClaims : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "handing a cgroup to a user needs root";
    if (!ContainerMachine::user_reaches(kForger, m_.path("")))
      GTEST_SKIP() << "uid " << kForger << " cannot reach " << m_.path("")
                   << " (a folder above it only root may enter, as a chroot's root made by "
                      "mktemp -d): the forger's processes cannot run there";
    m_.make_cgroup(kVictim);
    m_.make_cgroup(kUserManager, kForger);
  }

  // The victim's container, run by root: its init (holding nothing) and the trainer it started
  // (holding nvidia0) in the container's cgroup, and docker's state naming the init.
  pid_t start_victim(const std::string& pod = "") {
    const std::string dev = m_.path("dev/nvidia0");
    const std::string pid_file = m_.path("trainer.pid");
    pid_t init = m_.spawn(
        [&] {
          pid_t trainer = ContainerMachine::fork_ready([] {}, dev);
          std::ofstream(pid_file) << trainer;
        },
        "");
    std::ifstream(pid_file) >> trainer_;
    m_.adopt(trainer_);
    m_.enter(init, kVictim);
    m_.enter(trainer_, kVictim);
    m_.docker_container(kId, "trainer", init, pod);
    return init;
  }

  // uid 65534 makes `cgroup` itself, below the subtree it was given, and enters it.
  pid_t start_forger(const std::string& cgroup) {
    const std::string fs = m_.cgroup_fs();
    pid_t pid = m_.spawn([&] {
      ContainerMachine::become(kForger);
      ContainerMachine::make_cgroup_tree(fs, cgroup);
    });
    m_.enter(pid, cgroup);
    struct stat st {};
    EXPECT_EQ(::stat((fs + cgroup).c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, kForger) << "the kernel gives a cgroup to whoever made it";
    return pid;
  }

  // What the collector made of `pid`'s claim: "verified NAME: WHY" or "unverified NAME: WHY".
  std::string claim(pid_t pid, const std::string& runtime_root = "") {
    auto c = Collector::open(
        {m_.proc_root(), m_.dev_root(), m_.sys_root(), "/dev/null", runtime_root}, nullptr);
    if (!c) return "collector: " + c.error().message;
    auto view = c->scan_processes();
    const auto* p = view.find(pid);
    if (!p || !p->details) return "no details of " + std::to_string(pid);
    if (!p->details->container) return "no container";
    const auto& k = *p->details->container;
    if (!k.verified && (k.name || k.pod_name || k.pod_namespace))
      return "names an unverified claim";
    return (k.verified ? "verified " : "") + k.display_name() + ": " + k.verification;
  }

  ContainerMachine m_;
  pid_t trainer_ = 0;
};

TEST_F(ContainerClaims, TheRuntimesInitAndItsDescendantsAreTheContainer) {
  pid_t init = start_victim("research/bert-0");
  EXPECT_EQ(claim(init), "verified research/bert-0: docker names it as the container's init");
  EXPECT_EQ(claim(trainer_), "verified research/bert-0: docker names PID " + std::to_string(init) +
                                 ", its ancestor, as the container's init");
}

TEST_F(ContainerClaims, AProcessInTheInitsOwnCgroupIsTheContainers) {
  // `docker exec`: the runtime's shim starts it, so the init is no ancestor; it joins the
  // init's cgroup, which only root can do.
  pid_t init = start_victim();
  pid_t exec = m_.spawn([] {});
  m_.enter(exec, kVictim);
  EXPECT_EQ(claim(exec), "verified docker:trainer: it runs in the cgroup of PID " +
                             std::to_string(init) + ", which docker names as the container's init");
}

TEST_F(ContainerClaims, AScopeForgedInAUsersOwnSubtreeIsOnlyAClaim) {
  start_victim("research/bert-0");
  pid_t forger = start_forger(kForged);
  EXPECT_EQ(claim(forger), "unverified docker:" + kShort + ": cgroup " + kForged +
                               " lies in user@65534.service, the subtree systemd delegates to "
                               "that user");
}

TEST_F(ContainerClaims, ACgroupBelowAUserOwnedOneIsRefutedByItsOwner) {
  // A service with Delegate=yes run as a user: not named user@, but handed over all the same.
  start_victim();
  m_.make_cgroup("/system.slice/ci-runner.service", kForger);
  pid_t forger = start_forger("/system.slice/ci-runner.service/" + kScope);
  EXPECT_EQ(claim(forger), "unverified docker:" + kShort +
                               ": cgroup /system.slice/ci-runner.service belongs to uid 65534, "
                               "who may create and name any cgroup below it");
}

TEST_F(ContainerClaims, ARootOwnedCgroupTheRuntimeDisownsIsOnlyAClaim) {
  // Root made the cgroup, but docker's init runs elsewhere and is no ancestor.
  const std::string other = "/system.slice/other/" + kScope;
  m_.make_cgroup(other);
  pid_t init = start_victim();
  pid_t stray = m_.spawn([] {});
  m_.enter(stray, other);
  EXPECT_EQ(claim(stray), "unverified docker:" + kShort + ": docker names PID " +
                              std::to_string(init) +
                              " as the container's init, and it is neither this process, nor "
                              "its ancestor, nor in its cgroup");
}

TEST_F(ContainerClaims, AContainerTheRuntimeRecordsAsStoppedVouchesForNobody) {
  pid_t leftover = m_.spawn([] {});
  m_.enter(leftover, kVictim);
  m_.docker_container(kId, "trainer", 0);
  EXPECT_EQ(claim(leftover),
            "unverified docker:" + kShort + ": docker records no running init for the container");
}

TEST_F(ContainerClaims, WithoutRuntimeStateTheCgroupsOwnerVouchesAndTheKubeletNamesThePod) {
  // A pod-level process: no container id, so no runtime's state; its cgroup is root's.
  const std::string pod =
      "/kubepods.slice/kubepods-burstable.slice/"
      "kubepods-burstable-pod3f9d2a1c_6b7e_4c5d_8e9f_0a1b2c3d4e5f.slice";
  m_.make_cgroup(pod);
  m_.write("var/log/pods/research_bert-0_3f9d2a1c-6b7e-4c5d-8e9f-0a1b2c3d4e5f/.keep", "");
  pid_t p = m_.spawn([] {});
  m_.enter(p, pod);
  EXPECT_EQ(claim(p),
            "verified research/bert-0: its cgroup and every one above it belong to root, outside "
            "any user's delegated subtree; no runtime state names it");
}

TEST_F(ContainerClaims, WithoutRuntimeStateACgroupNotSeenHereVouchesForNothing) {
  pid_t p = m_.spawn([] {});
  m_.enter(p, "/system.slice/gone/" + kScope);
  EXPECT_EQ(claim(p), "unverified docker:" + kShort + ": no cgroup /system.slice/gone under " +
                          m_.cgroup_fs() +
                          " (gpureap sees another cgroup namespace, or the cgroup is gone); no "
                          "runtime state vouches for it");
}

TEST_F(ContainerClaims, ACgroupOutsideGpureapsNamespaceIsVerifiedByTheRuntimeAlone) {
  // gpureap in a pod of its own sees other pods' cgroups relative to its cgroup namespace.
  const std::string relative = "/../../system.slice/" + kScope;
  pid_t init = m_.spawn([] {});
  m_.enter(init, relative);
  EXPECT_EQ(claim(init), "unverified docker:" + kShort + ": cgroup " + relative +
                             " lies outside gpureap's cgroup namespace; no runtime state vouches "
                             "for it");
  m_.docker_container(kId, "trainer", init);
  EXPECT_EQ(claim(init), "verified docker:trainer: docker names it as the container's init");
  // A user's subtree is refuted by its name, seen or not.
  pid_t forger = m_.spawn([] {});
  m_.enter(forger, "/../.." + kForged);
  EXPECT_EQ(claim(forger), "unverified docker:" + kShort + ": cgroup /../.." + kForged +
                               " lies in user@65534.service, the subtree systemd delegates to "
                               "that user");
}

}  // namespace
}  // namespace gpureap::collect

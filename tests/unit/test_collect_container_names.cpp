// The collector names a holder's container from the runtime's state under the runtime root: a
// real process holding a stand-in GPU file, in docker's cgroup of a machine's tree
// (container_machine.h), with docker's state beside it. The default runtime root is the folder
// above the proc root.
#include <gtest/gtest.h>

#include <string>

#include "collect/collector.h"
#include "container_machine.h"

namespace gpureap::collect {
namespace {

using testing::ContainerMachine;

const std::string kId = "2a759f8fac4d817ff2bc28c224d51c5030f915c0c14997110517984ca9aa8d0f";
const std::string kCgroup = "/docker/" + kId;

class ContainerNaming : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "the machine's cgroups are root's: run as root";
    m_.make_cgroup(kCgroup);
    holder_ = m_.spawn([] {});
    m_.enter(holder_, kCgroup);
  }

  Roots roots(const std::string& runtime_root = "") const {
    return {m_.proc_root(), m_.dev_root(), m_.sys_root(), "/dev/null", runtime_root};
  }

  const core::ContainerInfo* container_of_holder(const core::ProcView& view) {
    const auto* p = view.find(holder_);
    return p && p->details && p->details->container ? &*p->details->container : nullptr;
  }

  ContainerMachine m_;
  pid_t holder_ = -1;
};

TEST_F(ContainerNaming, AHoldersContainerIsNamedFromTheRuntimeStateBesideTheProcRoot) {
  m_.docker_container(kId, "trainer-7", holder_);
  auto c = Collector::open(roots(), nullptr);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->roots().runtime_root, m_.root());
  auto view = c->scan_processes();
  const auto* container = container_of_holder(view);
  ASSERT_NE(container, nullptr) << "the holder was not found with its container";
  EXPECT_EQ(container->runtime, "docker");
  EXPECT_EQ(container->id, kId);
  EXPECT_EQ(container->name, "trainer-7");
  EXPECT_TRUE(container->verified) << container->verification;
  EXPECT_EQ(container->display_name(), "docker:trainer-7");
  // Only the holder (and its parents) get details; no other process is named.
  for (const auto& p : view.processes) {
    if (p.stat.pid == holder_ || !p.details || !p.details->container) continue;
    EXPECT_NE(p.details->container->name, "trainer-7") << p.stat.pid;
  }
}

TEST_F(ContainerNaming, AnotherRuntimeRootIsReadAndAMissingOneIsAClearError) {
  const std::string other = m_.path("elsewhere");
  m_.write("elsewhere/var/lib/docker/containers/" + kId + "/config.v2.json",
           R"({"Name":"/b","State":{"Running":true,"Pid":)" + std::to_string(holder_) + "}}");
  auto c = Collector::open(roots(other), nullptr);
  ASSERT_TRUE(c) << c.error().message;
  auto view = c->scan_processes();
  const auto* container = container_of_holder(view);
  ASSERT_NE(container, nullptr);
  EXPECT_EQ(container->name, "b");

  // No state there: the process is still found, with its id and no name (its cgroup is
  // root's, so the id is a fact).
  auto bare = Collector::open(roots(), nullptr);
  ASSERT_TRUE(bare);
  auto bare_view = bare->scan_processes();
  container = container_of_holder(bare_view);
  ASSERT_NE(container, nullptr);
  EXPECT_EQ(container->id, kId);
  EXPECT_EQ(container->name, std::nullopt);
  EXPECT_EQ(container->display_name(), "docker:2a759f8fac4d");

  auto missing = Collector::open(roots(m_.path("nope")), nullptr);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("cannot open runtime root " + m_.path("nope")),
            std::string::npos)
      << missing.error().message;
  EXPECT_NE(missing.error().hint.find("--runtime-root"), std::string::npos);
}

}  // namespace
}  // namespace gpureap::collect

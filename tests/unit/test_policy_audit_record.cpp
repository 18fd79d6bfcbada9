// policy::make_record: the process's identity in a policy's audit record, which the audit log
// keeps and the policy_action alert repeats ("Container: ...").
#include <gtest/gtest.h>

#include "policy/audit_record.h"
#include "snapshot_builders.h"

namespace gpureap::policy {
namespace {

using testing::GiB;
using testing::gpu;
using testing::holder;
using testing::listed;
using testing::make_snapshot;

TEST(PolicyAuditRecord, NamesAVerifiedContainerAndNoClaimedOne) {
  auto owner = holder(100, 1, 100);
  owner.details->user = "alice";
  owner.details->container =
      core::ContainerInfo{"docker", std::string(64, 'a'), std::nullopt, "trainer"};
  owner.details->container->verified = true;
  // Its cgroup's name claims alice's container; nothing vouches for it.
  auto forger = holder(200, 1, 200);
  forger.details->user = "mallory";
  forger.details->container = owner.details->container;
  forger.details->container->verified = false;
  auto s =
      make_snapshot({owner, forger}, {gpu(0, 0, 2 * GiB, {listed(100, GiB), listed(200, GiB)})});
  Policy p;
  p.name = "all";
  p.min_memory = 1;
  MatchContext context{s, s.timestamp, nullptr, nullptr};
  auto evals = evaluate(p, context);
  ASSERT_EQ(evals.size(), 2u);
  for (const auto& e : evals) {
    auto r = make_record(p, e, s, false, "matched", "logged");
    if (e.pid == 100)
      EXPECT_EQ(r.process.container, std::string(64, 'a'));
    else
      EXPECT_EQ(r.process.container, std::nullopt);
  }
}

}  // namespace
}  // namespace gpureap::policy

// When doctor takes its second sample --settle later, and when at once.
#include <gtest/gtest.h>

#include "doctor/settle.h"
#include "snapshot_builders.h"

namespace gpureap::doctor {
namespace {

using namespace gpureap::testing;

TEST(DoctorSettle, AHealthyMachineAnswersAtOnce) {
  auto s = make_snapshot({proc(1, 0, 1), holder(200, 1, 200)},
                         {gpu(0, 0, 8 * GiB, {listed(200, 8 * GiB)})});
  EXPECT_FALSE(needs_settle(s, std::nullopt));
}

TEST(DoctorSettle, AGonePidListedWaitsOnlyForItsGpu) {
  auto s = make_snapshot(
      {proc(1, 0, 1), holder(200, 1, 200, 1)},
      {gpu(0, 0, 8 * GiB, {listed(4242, 8 * GiB)}), gpu(1, 1, 8 * GiB, {listed(200, 8 * GiB)})});
  EXPECT_TRUE(needs_settle(s, std::nullopt));
  EXPECT_TRUE(needs_settle(s, 0u));
  EXPECT_FALSE(needs_settle(s, 1u));
}

TEST(DoctorSettle, UnattributedMemoryAndDStateHoldersWait) {
  auto unattributed = make_snapshot({proc(1, 0, 1), holder(200, 1, 200)},
                                    {gpu(0, 0, 9 * GiB, {listed(200, 8 * GiB)})});
  EXPECT_TRUE(needs_settle(unattributed, std::nullopt));
  auto stuck = make_snapshot({proc(1, 0, 1), holder(300, 1, 300, 0, 'D')}, {gpu(0, 0, 0, {})});
  EXPECT_TRUE(needs_settle(stuck, std::nullopt));
  EXPECT_TRUE(needs_settle(stuck, 0u));  // a D-state holder the driver lists nowhere: any GPU
}

}  // namespace
}  // namespace gpureap::doctor

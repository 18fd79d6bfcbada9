// What doctor --fix may remedy by ending processes, and what it leaves to a person.
#include <gtest/gtest.h>

#include "doctor/fixable.h"

namespace gpureap::doctor {
namespace {

Finding finding(FindingCode code, Severity sev, std::vector<pid_t> pids) {
  Finding f;
  f.code = code;
  f.severity = sev;
  f.pids = std::move(pids);
  return f;
}

TEST(DoctorFixable, GhostKeepersAndLeftoversOnePerPidNeverAPausedJob) {
  std::vector<Finding> fs = {
      finding(FindingCode::StoppedHolder, Severity::Warning, {30}),  // a paused job: a person's
      finding(FindingCode::NoSuchProcess, Severity::Critical, {4242, 4250}),  // kept: fixable
      finding(FindingCode::OrphanHolder, Severity::Warning, {12}),
      finding(FindingCode::InheritedHolder, Severity::Warning, {4250}),
      finding(FindingCode::StoppedHolder, Severity::Warning, {12}),  // 12 chosen as an orphan
  };
  auto chosen = fixable(fs);
  EXPECT_EQ(chosen, (std::vector<Fixable>{{12, core::Anomaly::Orphan},
                                          {4242, core::Anomaly::NoSuchProcess},
                                          {4250, core::Anomaly::InheritedHolder}}));
}

TEST(DoctorFixable, AFacetIsJudgedAsTheFindingItWouldBe) {
  auto ghost = finding(FindingCode::NoSuchProcess, Severity::Critical, {4242, 4250, 4251});
  ghost.facets = {{FindingCode::InheritedHolder, 4250, Severity::Warning, "kept"},
                  {FindingCode::OrphanHolder, 4250, Severity::Warning, "orphan"},
                  {FindingCode::InheritedHolder, 4251, Severity::Info, "a running job's worker"},
                  {FindingCode::StoppedHolder, 4251, Severity::Warning, "paused"}};
  EXPECT_EQ(fixable({ghost}), (std::vector<Fixable>{{4242, core::Anomaly::NoSuchProcess},
                                                    {4250, core::Anomaly::InheritedHolder}}));
}

TEST(DoctorFixable, WhatNeedsAPersonIsLeftAlone) {
  std::vector<Finding> fs = {
      // a gone PID in another namespace, or one nothing keeps, is not solved by a kill
      finding(FindingCode::NoSuchProcess, Severity::Warning, {4242}),
      // a live job's worker
      finding(FindingCode::InheritedHolder, Severity::Info, {4250}),
      finding(FindingCode::LeakedMemory, Severity::Critical, {999}),
      finding(FindingCode::UninterruptibleHolder, Severity::Warning, {301}),
      finding(FindingCode::ProtectedHolder, Severity::Info, {77}),
      finding(FindingCode::OrphanHolder, Severity::Warning, {}),  // no PID to end
  };
  EXPECT_TRUE(fixable(fs).empty());
}

}  // namespace
}  // namespace gpureap::doctor

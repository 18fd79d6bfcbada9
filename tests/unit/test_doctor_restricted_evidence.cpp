// Evidence from files only root can read joins a finding's evidence for a reader who could read
// them, and is only counted for anyone else.
#include <gtest/gtest.h>

#include "doctor/restricted_evidence.h"

namespace gpureap::doctor {
namespace {

std::vector<Finding> with_root_lines() {
  Finding f{FindingCode::GpuKernelError, Severity::Critical};
  f.evidence = {"MPS server runs the GPU work of 1 client (PID 7)"};
  f.restricted_evidence = {"server.log: fault at 0x1000", "control.log: server 51 exited"};
  Finding plain{FindingCode::StoppedHolder, Severity::Warning};
  plain.evidence = {"PID 8 is stopped"};
  return {f, plain};
}

TEST(DoctorRestrictedEvidence, APrivilegedReaderSeesTheLines) {
  auto fs = with_root_lines();
  show_restricted_evidence(fs, Reader::Privileged);
  EXPECT_EQ(fs[0].evidence, (std::vector<std::string>{
                                "MPS server runs the GPU work of 1 client (PID 7)",
                                "server.log: fault at 0x1000", "control.log: server 51 exited"}));
  EXPECT_TRUE(fs[0].restricted_evidence.empty());
  EXPECT_EQ(fs[1].evidence, std::vector<std::string>{"PID 8 is stopped"});
}

TEST(DoctorRestrictedEvidence, AnyoneElseIsToldTheyExistAndWhereToSeeThem) {
  auto fs = with_root_lines();
  show_restricted_evidence(fs, Reader::Anyone);
  ASSERT_EQ(fs[0].evidence.size(), 2u);
  EXPECT_EQ(fs[0].evidence[1],
            "2 lines of logs only root can read are left out here: `sudo gpureap doctor` shows "
            "them, as does the daemon to a client that sends its bearer token");
  EXPECT_TRUE(fs[0].restricted_evidence.empty());
  for (const auto& f : fs)
    for (const auto& e : f.evidence) EXPECT_EQ(e.find(".log:"), std::string::npos) << e;
  EXPECT_EQ(fs[1].evidence, std::vector<std::string>{"PID 8 is stopped"});
}

}  // namespace
}  // namespace gpureap::doctor

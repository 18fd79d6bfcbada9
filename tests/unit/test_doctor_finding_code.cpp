// Finding codes: an enum in code, stable strings outside (alert rules, --only, the JSON, the
// metrics' code label).
#include <gtest/gtest.h>

#include "doctor/finding.h"
#include "doctor/finding_code.h"

namespace gpureap::doctor {
namespace {

TEST(DoctorFindingCode, EveryCodeHasItsDocumentedString) {
  const std::vector<std::string> documented = {"driver-missing",
                                               "driver-mismatch",
                                               "driver-not-answering",
                                               "gpu-error",
                                               "nvml-layout",
                                               "incomplete-view",
                                               "ipc-residue",
                                               "ipc-unused",
                                               "foreign-namespace",
                                               "no-such-process",
                                               "releasing",
                                               "leaked-memory",
                                               "unattributed-memory",
                                               "inherited-holder",
                                               "orphan-holder",
                                               "stopped-holder",
                                               "uninterruptible-holder",
                                               "unreaped-zombies",
                                               "protected-holder",
                                               "gpu-xid",
                                               "kept-by-server",
                                               "stalled-job"};
  const auto& codes = all_finding_codes();
  ASSERT_EQ(codes.size(), documented.size());
  for (size_t i = 0; i < codes.size(); ++i) {
    EXPECT_EQ(to_string(codes[i]), documented[i]);
    EXPECT_EQ(finding_code_from_string(documented[i]), codes[i]) << documented[i];
  }
  EXPECT_EQ(finding_code_from_string("No-Such-Process"), std::nullopt);  // exact spelling only
  EXPECT_EQ(finding_code_from_string(""), std::nullopt);
}

TEST(DoctorFindingCode, AnUnknownNameIsAnErrorThatListsTheCodes) {
  auto ok = parse_finding_codes({"no-such-process", "leaked-memory"});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, (std::vector<FindingCode>{FindingCode::NoSuchProcess, FindingCode::LeakedMemory}));
  auto bad = parse_finding_codes({"no-such-process", "leaked-memroy"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "unknown finding code \"leaked-memroy\"");
  EXPECT_EQ(bad.error().hint.rfind("codes: driver-missing, driver-mismatch, ", 0), 0u)
      << bad.error().hint;
  EXPECT_NE(bad.error().hint.find("protected-holder"), std::string::npos);
}

TEST(DoctorFindingCode, KeepCodesKeepsOnlyThoseAndNothingMeansAll) {
  std::vector<Finding> fs = {{FindingCode::NoSuchProcess, Severity::Critical},
                             {FindingCode::StoppedHolder, Severity::Warning},
                             {FindingCode::LeakedMemory, Severity::Critical}};
  auto all = fs;
  keep_codes(all, {});
  EXPECT_EQ(all.size(), 3u);
  keep_codes(fs, {FindingCode::StoppedHolder, FindingCode::LeakedMemory});
  ASSERT_EQ(fs.size(), 2u);
  EXPECT_EQ(fs[0].code, FindingCode::StoppedHolder);
  EXPECT_EQ(fs[1].code, FindingCode::LeakedMemory);
}

}  // namespace
}  // namespace gpureap::doctor

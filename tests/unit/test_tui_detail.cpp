// top's detail pane shows for a process what `gpureap doctor` shows for it: the same
// evidence (the kernel log, the blocked tasks' waits) through the same examination.
#include <gtest/gtest.h>

#include <algorithm>

#include "doctor/examine.h"
#include "reap/safety.h"
#include "snapshot_builders.h"
#include "tui/detail.h"
#include "tui/model.h"

namespace gpureap::tui {
namespace {

using namespace gpureap::testing;

// A gone job's worker keeps its memory on GPU 0, whose Xid names the job; a holder on GPU 1
// waits in D state on a FUSE connection that answers nothing.
doctor::Evidence evidence() {
  auto s = std::make_shared<const core::Snapshot>(make_snapshot(
      {proc(1, 0, 1), holder(4250, 1, 4242), holder(700, 1, 700, 1, 'D')},
      {gpu(0, 0, 8 * GiB, {listed(4242, 8 * GiB)}), gpu(1, 1, 8 * GiB, {listed(700, 8 * GiB)})}));
  core::KernelGpuEvent xid;
  xid.vendor = "nvidia";
  xid.kind = "xid";
  xid.label = "Xid";
  xid.code = 31;
  xid.gpu = 0;
  xid.pid = 4242;
  xid.process_name = "python";
  xid.level = core::KernelEventLevel::Warning;
  xid.name = "MMU fault";
  xid.time = s->timestamp - std::chrono::minutes(10);
  auto log = std::make_shared<core::KernelLog>();
  log->read = true;
  log->events = {xid};
  core::BlockedTask wait;
  wait.pid = 700;
  wait.wchan = "request_wait_answer";
  wait.on = core::BlockedOn::Fuse;
  wait.fuse = {{48, "/mnt/remote", "fuse.sshfs", "me@host:/data", 3}};
  return {s, s, nullptr, log, {wait}};
}

bool names(const doctor::Finding& f, pid_t pid) {
  return std::find(f.pids.begin(), f.pids.end(), pid) != f.pids.end();
}

void expect_same(const doctor::Finding& a, const doctor::Finding& b) {
  EXPECT_EQ(a.code, b.code);
  EXPECT_EQ(a.severity, b.severity);
  EXPECT_EQ(a.gpus, b.gpus);
  EXPECT_EQ(a.pids, b.pids);
  EXPECT_EQ(a.memory_bytes, b.memory_bytes);
  EXPECT_EQ(a.evidence, b.evidence);
  EXPECT_EQ(a.explanation, b.explanation);
  EXPECT_EQ(a.remedy, b.remedy);
}

bool has_code(const std::vector<doctor::Finding>& fs, doctor::FindingCode code) {
  return std::any_of(fs.begin(), fs.end(), [&](const auto& f) { return f.has(code); });
}

TEST(TuiDetail, FindingsForAPidAreDoctorsOnTheSameEvidence) {
  auto e = evidence();
  // `gpureap doctor` without options, run by the user who read the logs.
  auto doctors =
      doctor::examine(e, {.reader = doctor::Reader::Privileged}, reap::is_protected_process);
  ASSERT_TRUE(has_code(doctors, doctor::FindingCode::GpuKernelError));
  ASSERT_TRUE(has_code(doctors, doctor::FindingCode::UninterruptibleHolder));
  for (pid_t pid : {1, 700, 4242, 4250}) {
    SCOPED_TRACE(pid);
    std::vector<doctor::Finding> want;
    std::copy_if(doctors.begin(), doctors.end(), std::back_inserter(want),
                 [&](const auto& f) { return names(f, pid); });
    auto got = detail_findings(e, pid);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) expect_same(got[i], want[i]);
  }
  // The kernel log's and the blocked task's evidence reached the pane; init has nothing.
  EXPECT_TRUE(has_code(detail_findings(e, 4242), doctor::FindingCode::GpuKernelError));
  EXPECT_TRUE(has_code(detail_findings(e, 700), doctor::FindingCode::UninterruptibleHolder));
  EXPECT_TRUE(detail_findings(e, 1).empty());
}

TEST(TuiDetail, TheOpenPaneAsksForTheEvidenceOfEachSampleAndShowsIt) {
  auto e = evidence();
  TopModel m(TopSettings{false, true, std::chrono::milliseconds(1000), Viewer{0, 0}});
  m.set_size(200, 60);
  m.set_snapshot(e.last);
  EXPECT_FALSE(m.wants_evidence()) << "closed: nothing to read";
  while (m.selected() != 700) {
    auto before = m.selected();
    m.handle(Key::of(Key::Down));
    ASSERT_NE(m.selected(), before) << "PID 700 is not in the table";
  }
  m.handle(Key::of(Key::Enter));
  ASSERT_TRUE(m.detail_open());
  EXPECT_TRUE(m.wants_evidence());
  // The snapshot alone tells the wait channel's kind, not which connection to abort.
  EXPECT_EQ(m.compose().text().find("connections/48/abort"), std::string::npos);
  m.set_evidence(std::make_shared<const doctor::Evidence>(e));
  EXPECT_FALSE(m.wants_evidence());
  EXPECT_NE(m.compose().text().find("connections/48/abort"), std::string::npos)
      << m.compose().text();
  // A new sample wants its own evidence; the old one is not shown for it.
  m.set_snapshot(std::make_shared<const core::Snapshot>(*e.last));
  EXPECT_TRUE(m.wants_evidence());
  EXPECT_EQ(m.compose().text().find("connections/48/abort"), std::string::npos);
}

}  // namespace
}  // namespace gpureap::tui

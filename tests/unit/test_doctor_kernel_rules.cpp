// Doctor over the kernel's evidence: Xids joined to the ghost story, reset advice turned into a
// reboot by the Xids no reset recovers, and the real fix for a D-state holder.
#include <gtest/gtest.h>

#include "doctor/diagnose.h"
#include "doctor/reset_remedy.h"
#include "snapshot_builders.h"

namespace gpureap::doctor {
namespace {

using namespace gpureap::testing;

core::KernelGpuEvent xid(unsigned code, std::optional<pid_t> pid, unsigned gpu,
                         core::KernelEventLevel level, bool reboot = false) {
  core::KernelGpuEvent e;
  e.vendor = "nvidia";
  e.kind = "xid";
  e.label = "Xid";  // as its parser names it
  e.code = code;
  e.pci_address = "0000:3b:00";
  e.gpu = gpu;
  e.pid = pid;
  e.process_name = "python";
  e.detail = "Ch 00000008";
  e.level = level;
  e.needs_reboot = reboot;
  e.name = "named";
  // Ten minutes before the builders' snapshot time.
  e.time = std::chrono::system_clock::time_point(std::chrono::seconds(1'700'000'000 - 600));
  return e;
}

std::vector<Finding> run(const core::Snapshot& s, const core::KernelLog& log,
                         std::vector<core::BlockedTask> blocked = {},
                         std::optional<unsigned> gpu = std::nullopt) {
  return diagnose({s, s, {}, gpu, nullptr, {}, &log, std::move(blocked)});
}

const Finding* find(const std::vector<Finding>& fs, FindingCode code) {
  for (const auto& f : fs)
    if (f.code == code) return &f;
  return nullptr;
}

// A copy of the finding of `code`, or an empty one (and a failure) when there is none.
Finding copy_of(const std::vector<Finding>& fs, FindingCode code) {
  if (const auto* f = find(fs, code)) return *f;
  ADD_FAILURE() << "no " << to_string(code) << " finding";
  return {};
}

bool has(const std::vector<std::string>& lines, const std::string& text) {
  for (const auto& l : lines)
    if (l.find(text) != std::string::npos) return true;
  return false;
}

bool has(const std::vector<RemedyStep>& steps, const std::string& text) {
  for (const auto& s : steps)
    if (s.line().find(text) != std::string::npos) return true;
  return false;
}

TEST(DoctorKernelRules, AnXidNamingAGonePidSaysWhoStillHoldsItsMemory) {
  auto s = make_snapshot({proc(1, 0, 1), holder(4250, 1, 4242)},
                         {gpu(0, 0, 8 * GiB, {listed(4242, 8 * GiB)})});
  core::KernelLog log;
  log.read = true;
  log.events = {xid(31, 4242, 0, core::KernelEventLevel::Warning)};
  auto fs = run(s, log);
  const auto* f = find(fs, FindingCode::GpuKernelError);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::Warning);
  EXPECT_EQ(f->gpus, std::vector<unsigned>{0});
  EXPECT_EQ(f->pids, std::vector<pid_t>{4242});
  EXPECT_TRUE(has(f->evidence, "PID 4242 hit Xid 31 at "));
  EXPECT_TRUE(has(f->evidence, "its memory (8.0 GiB) is still held by PID 4250 (p4250)"));
  // The gone process's start time went with it: the PID is the driver's listing, not proof.
  EXPECT_TRUE(has(f->evidence,
                  "whether the gone process is the one the Xid names cannot be "
                  "confirmed"));
  EXPECT_TRUE(has(f->remedy, "gpureap kill --ghosts"));
  EXPECT_TRUE(has(std::vector<std::string>{f->explanation}, "Xid 31, GPU memory page fault"));
  // The ghost itself is still the ghost finding, with its reset advice untouched.
  EXPECT_NE(find(fs, FindingCode::NoSuchProcess), nullptr);
}

// PID 300, listed on GPU 0, started 13 s after boot (the builders' start ticks at 100 per
// second); `boot_ago` places boot that long before the snapshot, whose Xid is 10 minutes old.
core::Snapshot listed_300(std::chrono::seconds boot_ago) {
  auto s = make_snapshot({proc(1, 0, 1), holder(300, 1, 300)},
                         {gpu(0, 0, 8 * GiB, {listed(300, 8 * GiB)})});
  s.proc.boot_time = 1'700'000'000 - boot_ago.count();
  return s;
}

// The gpu-xid finding of one event: Xid 31 naming PID 300, unless `e` says otherwise.
Finding xid_finding(const core::Snapshot& s,
                    core::KernelGpuEvent e = xid(31, 300, 0, core::KernelEventLevel::Warning)) {
  core::KernelLog log;
  log.events = {std::move(e)};
  return copy_of(run(s, log), FindingCode::GpuKernelError);
}

TEST(DoctorKernelRules, AnXidNamesAProcessThatWasRunningAtItsTime) {
  auto f = xid_finding(listed_300(std::chrono::hours(1)));  // started 47 minutes before the Xid
  EXPECT_TRUE(has(f.evidence, "PID 300 hit Xid 31 at ")) << ::testing::PrintToString(f.evidence);
  EXPECT_TRUE(has(f.evidence, "; it still runs and the driver lists it"));
  EXPECT_FALSE(has(f.evidence, "reused"));
  EXPECT_EQ(f.pids, std::vector<pid_t>{300});
}

TEST(DoctorKernelRules, AnXidBeforeTheProcessStartedNamesAReusedPid) {
  auto f = xid_finding(listed_300(std::chrono::seconds(605)));  // started 8 s after the Xid
  EXPECT_TRUE(has(f.evidence, "PID 300 hit Xid 31 at ")) << ::testing::PrintToString(f.evidence);
  EXPECT_TRUE(has(f.evidence, "the process now at PID 300 (p300) started later, at "));
  EXPECT_TRUE(has(f.evidence, "the PID was reused, and the Xid is not about that process"));
  EXPECT_FALSE(has(f.evidence, "still runs"));
  EXPECT_TRUE(f.pids.empty());  // the finding is not about the process at PID 300 now
}

TEST(DoctorKernelRules, AnXidOfUnknownTimeCannotConfirmItsPid) {
  auto s = listed_300(std::chrono::hours(1));
  auto timeless = xid(31, 300, 0, core::KernelEventLevel::Warning);
  timeless.time.reset();  // no boot time: the log's clock alone
  timeless.since_boot_usec = 2'500'000;
  auto f = xid_finding(s, timeless);
  EXPECT_TRUE(has(f.evidence,
                  "PID 300 hit Xid 31 at 2.5 s after boot; whether that was the "
                  "process now at PID 300 (p300) cannot be confirmed: the Xid's "
                  "clock time is unknown"))
      << ::testing::PrintToString(f.evidence);
  EXPECT_FALSE(has(f.evidence, "still runs"));
  // Nor when the process's start time is unknown (no boot time in the snapshot).
  s.proc.boot_time.reset();
  f = xid_finding(s);
  EXPECT_TRUE(has(f.evidence, "cannot be confirmed: its start time is unknown"))
      << ::testing::PrintToString(f.evidence);
}

// A record stamped later than the log was read (a day ahead: a saved log of another boot, or a
// forged one) is shown as such and decides nothing: it names no process, its Xid 79 asks for no
// reboot, and it is no recent fault.
TEST(DoctorKernelRules, AnXidStampedLaterThanItWasReadNamesNoProcess) {
  auto s = listed_300(std::chrono::hours(1));
  auto ahead = xid(79, 300, 0, core::KernelEventLevel::Critical, true);
  ahead.time = std::chrono::system_clock::time_point(std::chrono::seconds(1'700'000'000 + 86400));
  ahead.stamp = core::KernelStamp::Future;
  core::KernelLog log;
  log.events = {ahead};
  auto fs = run(s, log);
  auto f = copy_of(fs, FindingCode::GpuKernelError);
  EXPECT_EQ(f.severity, Severity::Info);
  EXPECT_TRUE(f.pids.empty());
  EXPECT_TRUE(has(f.evidence, "stamped later than the log was read: not this boot's"))
      << ::testing::PrintToString(f.evidence);
  EXPECT_TRUE(has(f.evidence, "is about no process running now"));
  EXPECT_TRUE(has(f.evidence, "1 of them is stamped later than the log was read"));
  EXPECT_FALSE(has(f.evidence, "PID 300 hit Xid"));
  EXPECT_FALSE(has(f.evidence, "still runs"));
  EXPECT_FALSE(has(f.remedy, "reboot")) << ::testing::PrintToString(f.remedy);
  EXPECT_EQ(reset_command(s, 0, &log), "gpureap reset --gpu 0");
  // The same record stamped within this boot is believed.
  log.events[0].time = std::chrono::system_clock::time_point(std::chrono::seconds(1'700'000'000));
  log.events[0].stamp = core::KernelStamp::ThisBoot;
  f = copy_of(run(s, log), FindingCode::GpuKernelError);
  EXPECT_EQ(f.severity, Severity::Critical);
  EXPECT_EQ(f.pids, std::vector<pid_t>{300});
  EXPECT_TRUE(has(f.remedy, "reboot"));
}

TEST(DoctorKernelRules, NoKernelLogOrNoXidsMeansNoFinding) {
  auto s = make_snapshot({proc(1, 0, 1), holder(200, 1, 200)},
                         {gpu(0, 0, 8 * GiB, {listed(200, 8 * GiB)})});
  core::KernelLog empty;
  empty.read = true;
  EXPECT_EQ(find(run(s, empty), FindingCode::GpuKernelError), nullptr);
  EXPECT_EQ(find(diagnose({s, s, {}, std::nullopt, nullptr, {}}), FindingCode::GpuKernelError),
            nullptr);
}

TEST(DoctorKernelRules, UnknownXidsAreShownAndGpuFilterApplies) {
  auto s = make_snapshot({proc(1, 0, 1)}, {gpu(0, 0, 0, {}), gpu(1, 1, 0, {})});
  core::KernelLog log;
  auto unknown = xid(150, std::nullopt, 1, core::KernelEventLevel::Warning);
  unknown.name.reset();
  log.events = {unknown};
  auto fs = run(s, log);
  const auto* f = find(fs, FindingCode::GpuKernelError);
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(has(f->evidence, "Xid 150 at "));
  EXPECT_TRUE(has(f->evidence, "Ch 00000008"));
  EXPECT_TRUE(has(std::vector<std::string>{f->explanation}, "not in gpureap's catalog"));
  EXPECT_EQ(find(run(s, log, {}, 0u), FindingCode::GpuKernelError),
            nullptr);  // --gpu 0: not its Xid
}

TEST(DoctorKernelRules, XidsOlderThanADayAreHistory) {
  auto s = make_snapshot({proc(1, 0, 1)}, {gpu(0, 0, 0, {})});
  core::KernelLog log;
  auto old = xid(48, std::nullopt, 0, core::KernelEventLevel::Critical);
  old.time = std::chrono::system_clock::time_point(std::chrono::seconds(1'700'000'000 - 3 * 86400));
  log.events = {old};
  auto fs = run(s, log);
  const auto* f = find(fs, FindingCode::GpuKernelError);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::Info);
  EXPECT_TRUE(has(f->evidence, "none in the last 24 hours"));
  log.events.push_back(xid(48, std::nullopt, 0, core::KernelEventLevel::Critical));
  fs = run(s, log);
  f = find(fs, FindingCode::GpuKernelError);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::Critical);
  EXPECT_FALSE(has(f->evidence, "none in the last 24 hours"));
}

TEST(DoctorKernelRules, Xid79TurnsResetAdviceIntoReboot) {
  // A leaked context: nothing holds the gone PID's memory, every process inspected.
  auto s = make_snapshot({proc(1, 0, 1)}, {gpu(0, 0, 8 * GiB, {listed(4242, 8 * GiB)})});
  core::KernelLog log;
  auto fs = run(s, log);
  const auto* leak = find(fs, FindingCode::LeakedMemory);
  ASSERT_NE(leak, nullptr);
  EXPECT_TRUE(has(leak->remedy, "gpureap reset --gpu 0"));
  log.events = {xid(79, std::nullopt, 0, core::KernelEventLevel::Critical, true)};
  fs = run(s, log);
  leak = find(fs, FindingCode::LeakedMemory);
  ASSERT_NE(leak, nullptr);
  EXPECT_FALSE(has(leak->remedy, "gpureap reset"));
  EXPECT_TRUE(has(leak->remedy, "reboot   # Xid 79"));
  const auto* x = find(fs, FindingCode::GpuKernelError);
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->severity, Severity::Critical);
  EXPECT_TRUE(has(x->remedy, "reboot"));
  // Another GPU's Xid 79 leaves this GPU's reset alone.
  EXPECT_EQ(reset_command(s, 0, &log).rfind("reboot", 0), 0u);
  log.events[0].gpu = 1;
  EXPECT_EQ(reset_command(s, 0, &log), "gpureap reset --gpu 0");
}

core::HostProcess in_d(pid_t pid) {
  auto p = holder(pid, 1, pid, 0, 'D');
  return p;
}

TEST(DoctorKernelRules, AFuseWaitNamesTheAbortOfItsConnection) {
  auto s = make_snapshot({proc(1, 0, 1), in_d(700)}, {gpu(0, 0, 8 * GiB, {listed(700, 8 * GiB)})});
  core::BlockedTask t;
  t.pid = 700;
  t.wchan = "request_wait_answer";
  t.stack = {"request_wait_answer", "fuse_simple_request"};
  t.on = core::BlockedOn::Fuse;
  t.fuse = {{48, "/mnt/remote", "fuse.sshfs", "me@host:/data", 3},
            {52, "/mnt/other", "fuse.rclone", "gdrive:", 0}};
  auto fs = run(s, {}, {t});
  const auto* f = find(fs, FindingCode::UninterruptibleHolder);
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(has(f->evidence, "in request_wait_answer"));
  EXPECT_TRUE(has(f->evidence, "its kernel stack: request_wait_answer < fuse_simple_request"));
  EXPECT_TRUE(has(f->evidence, "connection 48 with 3 request(s)"));
  EXPECT_FALSE(has(f->evidence, "connection 52"));  // answers its requests: not the one
  EXPECT_TRUE(has(f->remedy, "echo 1 > /sys/fs/fuse/connections/48/abort"));
  EXPECT_FALSE(has(f->remedy, "connections/52"));
  EXPECT_TRUE(has(std::vector<std::string>{f->explanation}, "ENOTCONN"));
}

TEST(DoctorKernelRules, NfsGpuDriverAndUnknownWaitsEachGetTheirFix) {
  auto s = make_snapshot({proc(1, 0, 1), in_d(701)}, {gpu(0, 0, 8 * GiB, {listed(701, 8 * GiB)})});
  core::BlockedTask t;
  t.pid = 701;
  t.wchan = "rpc_wait_bit_killable";
  t.stack_problem = "its kernel stack (/proc/701/stack) can be read by root only";
  t.on = core::BlockedOn::Nfs;
  t.nfs = {{"/home", "nfs4", "fileserver", "fileserver:/export/home"}};
  auto f = copy_of(run(s, {}, {t}), FindingCode::UninterruptibleHolder);
  EXPECT_TRUE(has(f.evidence, "root only"));
  EXPECT_TRUE(has(f.evidence, "NFS: /home (nfs4 from server fileserver)"));
  EXPECT_TRUE(has(f.remedy, "bring the NFS server fileserver back"));
  t.on = core::BlockedOn::GpuDriver;
  t.wchan = "uvm_va_space_destroy";
  f = copy_of(run(s, {}, {t}), FindingCode::UninterruptibleHolder);
  EXPECT_TRUE(has(f.remedy, "reboot"));
  EXPECT_FALSE(has(f.remedy, "NFS"));
  f = copy_of(run(s, {}, {}), FindingCode::UninterruptibleHolder);  // nothing could be read
  EXPECT_TRUE(has(f.remedy, "cat /proc/701/stack"));
  // The daemon reads no stacks: the wait channel of the snapshot alone still tells the kind.
  auto p = in_d(701);
  p.details->wchan = "uvm_va_space_destroy";
  auto s2 = make_snapshot({proc(1, 0, 1), p}, {gpu(0, 0, 8 * GiB, {listed(701, 8 * GiB)})});
  f = copy_of(run(s2, {}, {}), FindingCode::UninterruptibleHolder);
  EXPECT_TRUE(has(f.evidence, "inside the GPU driver"));
  EXPECT_TRUE(has(f.remedy, "reboot"));
}

TEST(DoctorKernelRules, TimeInDIsTheSettleWindowWhenBothSamplesSawIt) {
  auto first =
      make_snapshot({proc(1, 0, 1), in_d(701)}, {gpu(0, 0, 8 * GiB, {listed(701, 8 * GiB)})});
  SnapshotOptions later;
  later.at += std::chrono::seconds(5);
  auto last = make_snapshot({proc(1, 0, 1), in_d(701)},
                            {gpu(0, 0, 8 * GiB, {listed(701, 8 * GiB)})}, later);
  auto fs = diagnose({first, last, {}, std::nullopt, nullptr, {}, nullptr, {}});
  const auto* f = find(fs, FindingCode::UninterruptibleHolder);
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(has(f->evidence, "in both samples (5.0 s apart)"));
}

}  // namespace
}  // namespace gpureap::doctor

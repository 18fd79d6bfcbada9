// The holder book's rules, played with the batches the kernel's sources hand it (an overflow of
// the proc connector's queue included, which a test cannot cause) against a /proc tree laid out
// as the kernel lays it out. A PID is no identity: after exits were lost, an event under a number
// is the recorded process's only where /proc (or a full scan read after the loss) still shows its
// start time under it; otherwise no end is recorded for it, and the scans' lineage records one.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "daemon/holder_book.h"
#include "engine/known_ends.h"
#include "engine/listed_since.h"
#include "engine/scan_lineage.h"

namespace gpureap::daemon {
namespace {
namespace holder_book_test {

using engine::Ends;

constexpr pid_t kNumber = 4200001;  // the holder's number, handed out again after its end
constexpr pid_t kLauncher = 4200100;
constexpr uint64_t kStart = 5000;  // the holder's start time (ticks since boot)
constexpr uint64_t kLater = 9000;  // the start time of the next process under its number
constexpr uint64_t kLauncherStart = 1000;
constexpr int kStatus = 3 << 8;     // exit(3), as waitpid(2) reports it
constexpr unsigned kExiting = 0x4;  // PF_EXITING
// The scans' times, as ScanLineage is given them.
constexpr uint64_t kFirstScan = 100000;
constexpr uint64_t kNextScan = 200000;

class HolderBookTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpureap-holder-book-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    auto proc = procfs::ProcFs::open(root_);
    ASSERT_TRUE(proc) << proc.error().text();
    book_.emplace(*proc);
    from_ = engine::boot_ticks_now();
    // The events are stamped now, after the fixture's start times.
    if (from_ <= kLater) GTEST_SKIP() << "this machine booted less than " << kLater << " ticks ago";
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  // /proc/PID of a process of one thread, as the kernel shows it: its stat (the leader's) and
  // its thread's under task/. A zombie has ended, and counts itself alone.
  void in_proc(pid_t pid, uint64_t start, char state = 'S') {
    const unsigned flags = state == 'Z' ? kExiting : 0;
    const std::string dir = root_ + "/" + std::to_string(pid);
    for (const std::string& at : {dir, dir + "/task/" + std::to_string(pid)})
      stat_at(at, pid, state, flags, 1, start);
  }
  // /proc/PID of a process of two threads whose leader has exited: the leader a zombie that
  // counts both, its other thread (PID + 1) running on.
  void leader_gone(pid_t pid, uint64_t start) {
    const std::string dir = root_ + "/" + std::to_string(pid);
    for (const std::string& at : {dir, dir + "/task/" + std::to_string(pid)})
      stat_at(at, pid, 'Z', kExiting, 2, start);
    stat_at(dir + "/task/" + std::to_string(pid + 1), pid + 1, 'S', 0, 2, start);
  }
  static void stat_at(const std::string& at, pid_t pid, char state, unsigned flags, int threads,
                      uint64_t start) {
    std::filesystem::create_directories(at);
    std::ofstream(at + "/stat") << pid << " (worker) " << state << " 1 " << pid << " " << pid
                                << " 0 -1 " << flags << " 0 0 0 0 0 0 0 0 20 0 " << threads << " 0 "
                                << start << " 0 0\n";
  }
  void reaped(pid_t pid) { std::filesystem::remove_all(root_ + "/" + std::to_string(pid)); }

  static core::HostProcess process(pid_t pid, uint64_t start, bool holder) {
    core::HostProcess p;
    p.stat.pid = pid;
    p.stat.ppid = 1;
    p.stat.state = 'S';
    p.stat.start_ticks = start;
    if (holder) p.devices.push_back({"/dev/nvidia0", "nvidia", {}, true, {3}, {}});
    return p;
  }
  static core::ProcView view(std::vector<core::HostProcess> processes) {
    core::ProcView v;
    v.processes = std::move(processes);
    return v;
  }

  // A collection with a full scan, as the engine makes it: the request taken, then /proc read
  // (`v`), which the book and the scans' lineage are both given.
  engine::ScanRequest full_scan(const core::ProcView& v, uint64_t at_ticks) {
    engine::ScanRequest asked = book_->take();
    book_->scanned(v, true);
    lineage_.observe(v, at_ticks);
    return asked;
  }

  static track::ProcEvents::Batch lost() {
    track::ProcEvents::Batch b;
    b.overflow = true;
    return b;
  }
  // Now, in the connector's clock (CLOCK_MONOTONIC) of a machine that has not been suspended
  // since boot: the batches here are read so (boot_offset_ns 0), and that clock is then
  // CLOCK_BOOTTIME.
  static uint64_t event_ns_now() {
    timespec ts{};
    ::clock_gettime(CLOCK_BOOTTIME, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
  }
  // The start of clock tick `ticks` since boot, in the connector's clock.
  static uint64_t tick_ns(uint64_t ticks) {
    return ticks * (1000000000ull / static_cast<uint64_t>(::sysconf(_SC_CLK_TCK)));
  }
  static track::ProcEvent exit_of(pid_t pid, int status, uint64_t at_ns = event_ns_now()) {
    return {track::ProcEvent::Kind::Exit, pid, 0, pid, status, at_ns};
  }
  static track::ProcEvent thread_exit_of(pid_t pid, pid_t thread, int status) {
    return {track::ProcEvent::Kind::ThreadExit, pid, 0, thread, status, event_ns_now()};
  }
  static track::ProcEvent fork_of(pid_t child, pid_t parent) {
    return {track::ProcEvent::Kind::Fork, child, parent, child, 0, event_ns_now()};
  }
  static track::ProcEvents::Batch batch(std::vector<track::ProcEvent> events) {
    track::ProcEvents::Batch b;
    b.events = std::move(events);
    return b;
  }
  static track::FanotifyWatch::Batch open_by(pid_t pid, std::chrono::system_clock::time_point at) {
    track::FanotifyWatch::Batch b;
    b.events.push_back({track::FileEvent::Kind::Open, pid, "/dev/nvidia0", at});
    return b;
  }

  // The book's ends, whole, with each end time (of an exit stamped now, or of a check) checked
  // to lie within the test and then zeroed, to be compared with what a test expects.
  Ends ends() const {
    Ends out = book_->ends();
    const uint64_t to = engine::boot_ticks_now();
    for (auto& [pid, lives] : out)
      for (auto& life : lives) {
        EXPECT_GE(life.end_ticks, from_) << pid;
        EXPECT_LE(life.end_ticks, to) << pid;
        life.end_ticks = 0;
      }
    return out;
  }
  // What a collection hands the join: the book's ends first, the lineage's added.
  Ends merged() const {
    Ends out = book_->ends();
    engine::merge_ends(out, lineage_.ends());
    return out;
  }

  std::string root_;
  std::optional<HolderBook> book_;
  engine::ScanLineage lineage_;
  uint64_t from_ = 0;
};

// The defect: a holder's exit lost, its number handed to a short-lived process whose exit is
// read. That exit is no end of the holder (not its status, not its time): none is recorded, the
// engine is asked to read the number again, and the next full scan's lineage records the holder
// gone, bounded by that scan.
TEST_F(HolderBookTest, AnExitUnderALostHoldersNumberRecordsNoEndOfIt) {
  in_proc(kNumber, kStart);
  full_scan(view({process(kNumber, kStart, true)}), kFirstScan);
  book_->on_procs(lost());
  reaped(kNumber);                // the holder ended unseen, and was reaped
  in_proc(kNumber, kLater, 'Z');  // another process got its number, and has ended
  EXPECT_TRUE(book_->on_procs(batch({exit_of(kNumber, kStatus)})));
  EXPECT_EQ(ends(), Ends{});

  reaped(kNumber);
  const engine::ScanRequest asked = full_scan(view({}), kNextScan);
  EXPECT_TRUE(asked.full);
  EXPECT_EQ(asked.exited, std::vector<pid_t>{kNumber});
  EXPECT_EQ(ends(), Ends{});
  const Ends honest{{kNumber, {{kStart, kNextScan, true, std::nullopt}}}};
  EXPECT_EQ(merged(), honest);
}

// The batch that reports the overflow may carry events from after the loss, in an order it does
// not keep: that exit is no end of the holder either.
TEST_F(HolderBookTest, AnExitReadWithTheOverflowRecordsNoEndOfTheLostHolder) {
  in_proc(kNumber, kStart);
  full_scan(view({process(kNumber, kStart, true)}), kFirstScan);
  in_proc(kNumber, kLater, 'Z');
  track::ProcEvents::Batch with_loss = batch({exit_of(kNumber, kStatus)});
  with_loss.overflow = true;
  EXPECT_TRUE(book_->on_procs(with_loss));
  EXPECT_EQ(ends(), Ends{});
  EXPECT_EQ(book_->counters().overflows, 1u);
}

// A fork handing out a holder's number proves that holder ended (unseen, when not known): the
// child is a new holder (its parent holds), and its own end records nothing of the old one.
TEST_F(HolderBookTest, AForkThatHandsOutALostHoldersNumberEndsItsRecord) {
  in_proc(kNumber, kStart);
  in_proc(kLauncher, kLauncherStart);
  full_scan(view({process(kNumber, kStart, true), process(kLauncher, kLauncherStart, true)}),
            kFirstScan);
  book_->on_procs(lost());
  reaped(kNumber);
  in_proc(kNumber, kLater);
  EXPECT_TRUE(book_->on_procs(batch({fork_of(kNumber, kLauncher)})));
  const engine::ScanRequest asked = book_->take();
  EXPECT_EQ(asked.pids, std::vector<pid_t>{kNumber});    // the child, to read
  EXPECT_EQ(asked.exited, std::vector<pid_t>{kNumber});  // what the view has under it ended

  in_proc(kNumber, kLater, 'Z');
  EXPECT_TRUE(book_->on_procs(batch({exit_of(kNumber, SIGKILL)})));
  EXPECT_EQ(ends(), Ends{});
  EXPECT_EQ(book_->exited_parents(), (std::map<pid_t, pid_t>{}));  // its parent lives
}

// The kernel hands a number out again only after its process's exit, which comes first: a
// record left under a forked child's number with another start time than /proc shows is ended
// all the same, with no loss reported.
TEST_F(HolderBookTest, AForkThatHandsOutARecordedNumberEndsItsRecordWithoutALoss) {
  in_proc(kNumber, kStart);
  in_proc(kLauncher, kLauncherStart);
  full_scan(view({process(kNumber, kStart, true), process(kLauncher, kLauncherStart, true)}),
            kFirstScan);
  reaped(kNumber);
  in_proc(kNumber, kLater);
  EXPECT_TRUE(book_->on_procs(batch({fork_of(kNumber, kLauncher)})));
  in_proc(kNumber, kLater, 'Z');
  EXPECT_TRUE(book_->on_procs(batch({exit_of(kNumber, SIGKILL)})));
  EXPECT_EQ(ends(), Ends{});
}

// A scan that read the holder before its fork was read is the child's own record: it stays.
TEST_F(HolderBookTest, AForkedChildTheScanReadFirstKeepsItsRecord) {
  in_proc(kNumber, kLater);
  in_proc(kLauncher, kLauncherStart);
  full_scan(view({process(kNumber, kLater, true), process(kLauncher, kLauncherStart, true)}),
            kFirstScan);
  book_->on_procs(batch({fork_of(kNumber, kLauncher)}));
  in_proc(kNumber, kLater, 'Z');
  book_->on_procs(batch({exit_of(kNumber, SIGKILL)}));
  const Ends want{{kNumber, {{kLater, 0, true, SIGKILL}}}};
  EXPECT_EQ(ends(), want);
}

// What must still be found: a holder that outlived the loss, shown by a full scan read after
// it, is vouched for again, and its exit (gone from /proc when read) is its end.
TEST_F(HolderBookTest, AHolderAFullScanShowsAfterTheLossHasItsEndRecorded) {
  in_proc(kNumber, kStart);
  in_proc(kLauncher, kLauncherStart);
  const core::ProcView both =
      view({process(kNumber, kStart, true), process(kLauncher, kLauncherStart, false)});
  full_scan(both, kFirstScan);
  book_->on_procs(lost());
  EXPECT_TRUE(full_scan(both, kNextScan).full);
  reaped(kNumber);
  EXPECT_TRUE(book_->on_procs(batch({exit_of(kNumber, SIGKILL)})));
  const Ends want{{kNumber, {{kStart, 0, true, SIGKILL}}}};
  EXPECT_EQ(ends(), want);
}

// What must still be found: one whose exit comes before that scan, /proc showing its start time
// under the number as a zombie, is vouched for by /proc.
TEST_F(HolderBookTest, AHolderProcShowsAtItsExitAfterTheLossHasItsEndRecorded) {
  in_proc(kNumber, kStart);
  full_scan(view({process(kNumber, kStart, true)}), kFirstScan);
  book_->on_procs(lost());
  in_proc(kNumber, kStart, 'Z');
  EXPECT_TRUE(book_->on_procs(batch({exit_of(kNumber, kStatus)})));
  const Ends want{{kNumber, {{kStart, 0, true, kStatus}}}};
  EXPECT_EQ(ends(), want);
}

// A collection that took its request before the loss read /proc before it, maybe: its scan
// vouches for nothing, and the exit that follows under the number records no end.
TEST_F(HolderBookTest, AScanTakenBeforeTheLossVouchesForNothing) {
  in_proc(kNumber, kStart);
  const core::ProcView before = view({process(kNumber, kStart, true)});
  full_scan(before, kFirstScan);
  book_->take();
  book_->on_procs(lost());
  book_->scanned(before, true);  // read before the loss, handed over after it
  reaped(kNumber);
  in_proc(kNumber, kLater, 'Z');
  book_->on_procs(batch({exit_of(kNumber, kStatus)}));
  EXPECT_EQ(ends(), Ends{});
}

// The same scan lends the start time it read to no process that has the number after the loss,
// though no record had the number before it.
TEST_F(HolderBookTest, AScanTakenBeforeTheLossLendsItsStartTimesToNoLaterProcess) {
  in_proc(kNumber, kStart);
  book_->take();
  book_->on_procs(lost());
  book_->scanned(view({process(kNumber, kStart, true)}), false);
  reaped(kNumber);
  in_proc(kNumber, kLater, 'Z');
  book_->on_procs(batch({exit_of(kNumber, kStatus)}));
  EXPECT_EQ(ends(), Ends{});
}

// With no loss: a collection reads a holder alive, and its exit is read before that scan is
// handed over. The scan brings back neither the holder nor its start time (the engine reads it
// again instead): the exit of the number's next process is no second end of it.
TEST_F(HolderBookTest, AScanReadBeforeAnExitItIsHandedAfterBringsNothingBack) {
  in_proc(kNumber, kStart);
  const core::ProcView alive = view({process(kNumber, kStart, true)});
  full_scan(alive, kFirstScan);
  book_->take();
  reaped(kNumber);
  EXPECT_TRUE(book_->on_procs(batch({exit_of(kNumber, kStatus)})));
  book_->scanned(alive, false);
  EXPECT_EQ(book_->take().exited, std::vector<pid_t>{kNumber});
  in_proc(kNumber, kLater, 'Z');
  book_->on_procs(batch({exit_of(kNumber, SIGKILL)}));
  const Ends want{{kNumber, {{kStart, 0, true, kStatus}}}};
  EXPECT_EQ(ends(), want);
}

// An open read under a lost holder's number is the new process's beginning, not the old one's,
// and that process's end records nothing of the old one.
TEST_F(HolderBookTest, AnOpenUnderALostHoldersNumberIsANewHoldersBeginning) {
  const auto first = std::chrono::system_clock::now() - std::chrono::minutes(5);
  const auto second = std::chrono::system_clock::now();
  in_proc(kNumber, kStart);
  book_->on_files(open_by(kNumber, first));
  full_scan(view({process(kNumber, kStart, true)}), kFirstScan);
  EXPECT_EQ(book_->began_holding(kNumber), first);
  book_->on_procs(lost());
  reaped(kNumber);
  in_proc(kNumber, kLater);
  book_->on_files(open_by(kNumber, second));
  EXPECT_EQ(book_->began_holding(kNumber), second);
  in_proc(kNumber, kLater, 'Z');
  book_->on_procs(batch({exit_of(kNumber, kStatus)}));
  EXPECT_EQ(ends(), Ends{});
  EXPECT_EQ(book_->began_holding(kNumber), std::nullopt);
}

// A process of the view that held nothing and whose exit was lost lends its start time to no
// holder that gets its number after it.
TEST_F(HolderBookTest, ALostProcessLendsItsStartTimeToNoLaterHolder) {
  in_proc(kNumber, kStart);
  full_scan(view({process(kNumber, kStart, false)}), kFirstScan);
  book_->on_procs(lost());
  reaped(kNumber);
  in_proc(kNumber, kLater);
  book_->on_files(open_by(kNumber, std::chrono::system_clock::now()));
  in_proc(kNumber, kLater, 'Z');
  book_->on_procs(batch({exit_of(kNumber, kStatus)}));
  EXPECT_EQ(ends(), Ends{});
}

// A holder whose main thread had exited is checked at once after a loss (its last thread's exit
// may be among the lost ones): gone, it ended when no one knows, and the lineage records it; a
// zombie still under its start time is its end, with no status (the exit that gave it was lost).
TEST_F(HolderBookTest, AHolderWithoutItsLeaderIsEndedAfterALossOnlyByItsOwnStartTime) {
  constexpr pid_t kOther = kNumber + 7;
  in_proc(kNumber, kStart);
  in_proc(kOther, kStart + 1);
  core::HostProcess gone_one = process(kNumber, kStart, true);
  core::HostProcess zombie_one = process(kOther, kStart + 1, true);
  gone_one.stat.leader_exited = zombie_one.stat.leader_exited = true;
  full_scan(view({gone_one, zombie_one}), kFirstScan);
  book_->on_procs(lost());
  reaped(kNumber);
  in_proc(kNumber, kLater, 'Z');
  in_proc(kOther, kStart + 1, 'Z');
  EXPECT_TRUE(book_->recheck_unconfirmed(std::chrono::steady_clock::now()).changed);
  const Ends want{{kOther, {{kStart + 1, 0, true, std::nullopt}}}};
  EXPECT_EQ(ends(), want);
}

// A holder whose leader's exit was not its end (its other thread ran on) is checked again later,
// by its own start time: its last thread's exit, read while /proc still counted the thread, and
// its number's next process, read by a scan before the fork that made it, leave a check due under
// that number. That process has ended too by the check: its end is no end of the holder's (not
// with the holder's wait status, not at the check's time), and the holder, replaced, ended when
// no one knows: no end is recorded for it. The next process's own exit, read later, is its end.
TEST_F(HolderBookTest, AnUnconfirmedEndIsCheckedAgainByItsOwnStartTime) {
  in_proc(kNumber, kStart);
  in_proc(kLauncher, kLauncherStart);
  full_scan(view({process(kNumber, kStart, true), process(kLauncher, kLauncherStart, false)}),
            kFirstScan);
  leader_gone(kNumber, kStart);
  book_->on_procs(
      batch({exit_of(kNumber, kStatus), thread_exit_of(kNumber, kNumber + 1, kStatus)}));
  EXPECT_EQ(ends(), Ends{});
  reaped(kNumber);           // its last thread is released, and it is reaped
  in_proc(kNumber, kLater);  // the number's next process, whose fork is not read yet
  full_scan(view({process(kNumber, kLater, true), process(kLauncher, kLauncherStart, false)}),
            kNextScan);
  in_proc(kNumber, kLater, 'Z');
  book_->recheck_unconfirmed(std::chrono::steady_clock::now() + std::chrono::seconds(10));
  EXPECT_EQ(ends(), Ends{});
  EXPECT_EQ(book_->holders(), std::set<pid_t>{kNumber});  // the next process, as the scan saw it
  book_->on_procs(batch({fork_of(kNumber, kLauncher), exit_of(kNumber, SIGKILL)}));
  const Ends want{{kNumber, {{kLater, 0, true, SIGKILL}}}};
  EXPECT_EQ(ends(), want);
  EXPECT_EQ(book_->holders(), std::set<pid_t>{});
}

// With no loss, a scan can read a number's next process before the exit of the process it had
// before is read: that exit, stamped before the next one started, is no end of it (neither its
// wait status nor its time). The next one's own exit, read after, is.
TEST_F(HolderBookTest, AnExitReadAfterAScanOfTheNumbersNextProcessIsNoEndOfIt) {
  in_proc(kNumber, kStart);
  full_scan(view({process(kNumber, kStart, true)}), kFirstScan);
  reaped(kNumber);           // the holder ended, unread yet, and was reaped
  in_proc(kNumber, kLater);  // the number's next process, which a scan reads first
  full_scan(view({process(kNumber, kLater, true)}), kNextScan);
  in_proc(kNumber, kLater, 'Z');  // it has ended too when the first exit is read
  book_->on_procs(batch({exit_of(kNumber, kStatus, tick_ns(kLater - 100))}));
  EXPECT_EQ(ends(), Ends{});
  EXPECT_EQ(book_->holders(), std::set<pid_t>{kNumber});  // the next process holds still
  book_->on_procs(batch({exit_of(kNumber, SIGKILL)}));
  const Ends want{{kNumber, {{kLater, 0, true, SIGKILL}}}};
  EXPECT_EQ(ends(), want);
  EXPECT_EQ(book_->holders(), std::set<pid_t>{});
}

// The book can know two start times under one number: a scan's, and the one /proc showed when a
// holder's fork was read, which is the parent's only if the parent still had the number then. A
// parent that had exited by that read lent its fork its number's next process's start. An exit is
// the end of the newest process known under its number that had started by then: the parent's
// own exit is its end, and the next process stays as it was (its own exit, read later, is no
// second end of the holder).
TEST_F(HolderBookTest, AnExitIsTheEndOfTheNewestProcessStartedByThen) {
  constexpr pid_t kChild = kNumber + 7;
  in_proc(kNumber, kStart);
  book_->on_files(open_by(kNumber, std::chrono::system_clock::now()));
  book_->take();  // a collection reads /proc: the holder, alive
  const core::ProcView read = view({process(kNumber, kStart, true)});
  in_proc(kChild, kStart + 1);  // it forked, then exited and was reaped, and its number went on
  reaped(kNumber);
  in_proc(kNumber, kLater);
  book_->on_procs(batch({fork_of(kChild, kNumber)}));  // the fork, read only now
  book_->scanned(read, false);
  book_->on_procs(batch({exit_of(kNumber, kStatus, tick_ns(kLater - 100))}));
  const Ends want{{kNumber, {{kStart, kLater - 100, true, kStatus}}}};
  EXPECT_EQ(book_->ends(), want);
  EXPECT_EQ(book_->exited_parents(), (std::map<pid_t, pid_t>{{kChild, kNumber}}));
  EXPECT_EQ(book_->holders(), std::set<pid_t>{kChild});
  in_proc(kNumber, kLater, 'Z');
  book_->on_procs(batch({exit_of(kNumber, SIGKILL)}));
  EXPECT_EQ(book_->ends(), want);
}

// A holder whose start time the book never read (its open was read, no scan saw it, and it had
// exited when its fork was read): /proc cannot vouch for its end, but a process that started
// under its number after its exit is not it running on. Its exit ends it (no end recorded, with
// no start time), and its child is its orphan.
TEST_F(HolderBookTest, AProcessStartedAfterAnExitIsNotTheOneThatExited) {
  constexpr pid_t kChild = kNumber + 7;
  book_->on_files(open_by(kNumber, std::chrono::system_clock::now()));
  in_proc(kChild, kStart + 1);
  book_->on_procs(batch({fork_of(kChild, kNumber)}));
  in_proc(kNumber, kLater);  // the number's next process
  book_->on_procs(batch({exit_of(kNumber, kStatus, tick_ns(kLater - 100))}));
  EXPECT_EQ(book_->ends(), Ends{});
  EXPECT_EQ(book_->exited_parents(), (std::map<pid_t, pid_t>{{kChild, kNumber}}));
  EXPECT_EQ(book_->holders(), std::set<pid_t>{kChild});
}

// A start time is rounded down to its clock tick: a holder that started in its exit's tick, or
// in the one before, is that exit's, and its end is recorded.
TEST_F(HolderBookTest, AnExitInTheTickItsProcessStartedIsItsEnd) {
  constexpr pid_t kOther = kNumber + 7;
  in_proc(kNumber, kLater);
  in_proc(kOther, kLater);
  full_scan(view({process(kNumber, kLater, true), process(kOther, kLater, true)}), kFirstScan);
  reaped(kNumber);
  reaped(kOther);
  // Half a tick into the tick it started in; the start of the next tick.
  book_->on_procs(batch({exit_of(kNumber, kStatus, tick_ns(kLater) + tick_ns(1) / 2),
                         exit_of(kOther, SIGKILL, tick_ns(kLater + 1))}));
  const Ends want{{kNumber, {{kLater, kLater, true, kStatus}}},
                  {kOther, {{kLater, kLater + 1, true, SIGKILL}}}};
  EXPECT_EQ(book_->ends(), want);
  EXPECT_EQ(book_->holders(), std::set<pid_t>{});
}

// An end is dated by the kernel's time of its exit, not by when the exit was read (a busy daemon
// reads late). The connector's clock (CLOCK_MONOTONIC) stops while the machine is suspended: the
// time spent so, as the batch's read saw it, is added to give /proc's clock of start times.
TEST_F(HolderBookTest, AnEndIsDatedByTheKernelsTimeOfItsExit) {
  constexpr pid_t kOther = kNumber + 7;
  in_proc(kNumber, kStart);
  in_proc(kOther, kStart);
  full_scan(view({process(kNumber, kStart, true), process(kOther, kStart, true)}), kFirstScan);
  reaped(kNumber);
  reaped(kOther);
  book_->on_procs(batch({exit_of(kNumber, kStatus, tick_ns(kStart + 100))}));
  track::ProcEvents::Batch after_sleep = batch({exit_of(kOther, SIGKILL, tick_ns(kStart + 100))});
  after_sleep.boot_offset_ns = tick_ns(50);  // the machine had slept 50 ticks before the exit
  book_->on_procs(after_sleep);
  const Ends want{{kNumber, {{kStart, kStart + 100, true, kStatus}}},
                  {kOther, {{kStart, kStart + 150, true, SIGKILL}}}};
  EXPECT_EQ(book_->ends(), want);
  EXPECT_EQ(book_->holders(), std::set<pid_t>{});
}

// Forks by a process not known to hold are kept for its open read later; a fork that hands the
// parent's number out again ends them: an open under the number is then the new process's, and
// the earlier process's child is none of its.
TEST_F(HolderBookTest, AnOpenUnderARecentParentsNumberHandedOutAgainClaimsNoChild) {
  constexpr pid_t kParent = 4200200, kChild = 4200201, kForker = 4200300;
  in_proc(kChild, kStart);
  in_proc(kForker, kLauncherStart);
  in_proc(kParent, kLater);  // the number's next process
  book_->on_procs(
      batch({fork_of(kChild, kParent), exit_of(kParent, 0), fork_of(kParent, kForker)}));
  book_->on_files(open_by(kParent, std::chrono::system_clock::now()));
  EXPECT_EQ(book_->holders(), std::set<pid_t>{kParent});
  EXPECT_EQ(book_->take().pids, std::vector<pid_t>{kParent});
  EXPECT_EQ(book_->exited_parents(), (std::map<pid_t, pid_t>{}));
  EXPECT_EQ(ends(), Ends{});
}

// A scan can read a number's next process before the fork that made it is read: a recent fork's
// parent whose exit was read holds nothing, whatever holds under its number now, and an open by
// another process claims none of its children.
TEST_F(HolderBookTest, ARecentParentThatExitedLendsNoChildToItsNumbersNextHolder) {
  constexpr pid_t kParent = 4200200, kChild = 4200201, kOpener = 4200400;
  in_proc(kChild, kStart);
  in_proc(kParent, kLater);  // the number's next process
  in_proc(kOpener, kLauncherStart);
  book_->on_procs(batch({fork_of(kChild, kParent), exit_of(kParent, 0)}));
  full_scan(view({process(kParent, kLater, true), process(kChild, kStart, false),
                  process(kOpener, kLauncherStart, false)}),
            kFirstScan);
  book_->on_files(open_by(kOpener, std::chrono::system_clock::now()));
  EXPECT_EQ(book_->holders(), (std::set<pid_t>{kParent, kOpener}));
  EXPECT_EQ(book_->take().pids, std::vector<pid_t>{kOpener});
  EXPECT_EQ(book_->exited_parents(), (std::map<pid_t, pid_t>{}));
  EXPECT_EQ(ends(), Ends{});
}

// A recent fork's child that exits holds nothing: the open of its parent read later claims
// neither it nor the process a fork hands its number to next, nor that one's children.
TEST_F(HolderBookTest, AnOpenClaimsNoRecentChildThatExitedNorItsNumbersNextProcess) {
  constexpr pid_t kParent = 4200200, kChild = 4200201, kForker = 4200300;
  in_proc(kParent, kStart);
  in_proc(kForker, kLauncherStart);
  book_->on_procs(batch({fork_of(kChild, kParent), exit_of(kChild, 0)}));
  book_->on_files(open_by(kParent, std::chrono::system_clock::now()));
  EXPECT_EQ(book_->holders(), std::set<pid_t>{kParent});
  EXPECT_EQ(book_->take().pids, std::vector<pid_t>{kParent});

  constexpr pid_t kOtherParent = 4200210, kNextOnesChild = 4200211;
  in_proc(kOtherParent, kStart);
  in_proc(kChild, kLater);  // the child's number's next process
  in_proc(kNextOnesChild, kLater + 1);
  book_->on_procs(batch({fork_of(kChild, kOtherParent), exit_of(kChild, 0),
                         fork_of(kChild, kForker), fork_of(kNextOnesChild, kChild)}));
  book_->on_files(open_by(kOtherParent, std::chrono::system_clock::now()));
  EXPECT_EQ(book_->holders(), (std::set<pid_t>{kParent, kOtherParent}));
  EXPECT_EQ(book_->take().pids, std::vector<pid_t>{kOtherParent});
  EXPECT_EQ(book_->exited_parents(), (std::map<pid_t, pid_t>{}));
  EXPECT_EQ(ends(), Ends{});
}

// What must still be found: a process that opened, forked and exited before its open was read
// (no fork handed its number out since) made its child a holder, whose parent has exited.
TEST_F(HolderBookTest, AnOpenReadAfterItsOpenersExitStillClaimsItsChild) {
  constexpr pid_t kParent = 4200200, kChild = 4200201, kGrandchild = 4200202;
  in_proc(kChild, kStart);
  in_proc(kGrandchild, kStart + 1);
  book_->on_procs(
      batch({fork_of(kChild, kParent), fork_of(kGrandchild, kChild), exit_of(kParent, 0)}));
  book_->on_files(open_by(kParent, std::chrono::system_clock::now()));
  EXPECT_EQ(book_->holders(), (std::set<pid_t>{kChild, kGrandchild}));
  EXPECT_EQ(book_->exited_parents(), (std::map<pid_t, pid_t>{{kChild, kParent}}));
  EXPECT_EQ(ends(), Ends{});
}

// A loss of the connector's events may have lost the exits and forks that hand numbers out:
// no recent fork is kept past it, and the open read after asks for a full scan instead, which
// finds the children that hold.
TEST_F(HolderBookTest, NoRecentForkOutlivesALossOfEvents) {
  constexpr pid_t kParent = 4200200, kChild = 4200201;
  in_proc(kParent, kStart);
  in_proc(kChild, kStart + 1);
  book_->on_procs(batch({fork_of(kChild, kParent)}));
  book_->on_procs(lost());
  book_->on_files(open_by(kParent, std::chrono::system_clock::now()));
  EXPECT_EQ(book_->holders(), std::set<pid_t>{kParent});
  const engine::ScanRequest asked = book_->take();
  EXPECT_TRUE(asked.full);
  EXPECT_EQ(asked.pids, std::vector<pid_t>{kParent});
  EXPECT_EQ(ends(), Ends{});
}

// A final close is the closing process's only from its start: asked for the release of a
// process under a number, the book gives none an earlier process under it made (the audit
// record of an action on the later one would carry that time), and the later one's own.
TEST_F(HolderBookTest, AReleaseIsNoLaterProcessesUnderItsNumber) {
  const auto t0 = std::chrono::system_clock::now();
  const auto started = t0 + std::chrono::seconds(5);  // the later process's start
  auto close_by = [](pid_t pid, std::chrono::system_clock::time_point at) {
    track::FanotifyWatch::Batch b;
    b.events.push_back({track::FileEvent::Kind::Close, pid, "/dev/nvidia0", at});
    return b;
  };
  book_->on_files(close_by(kNumber, t0));
  book_->on_files(close_by(kNumber + 1, started + std::chrono::seconds(1)));
  EXPECT_EQ(book_->released_by(kNumber, started), std::nullopt);
  EXPECT_EQ(book_->released_by(kNumber, t0), t0);
  const auto own = started + std::chrono::seconds(2);
  book_->on_files(close_by(kNumber, own));
  EXPECT_EQ(book_->released_by(kNumber, started), own);
  EXPECT_EQ(book_->released_by(kNumber + 2, t0), std::nullopt);
}

}  // namespace holder_book_test
}  // namespace
}  // namespace gpureap::daemon

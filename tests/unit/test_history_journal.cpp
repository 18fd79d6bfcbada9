// The incident journal from samples alone: lanes from first sample to last, a forked worker
// followed from its parent, a gone PID's lane continued as a ghost under its living name, a
// stopped holder, memory coming back, and announced signals with who sent them.
#include <gtest/gtest.h>

#include <map>

#include "history/journal.h"
#include "snapshot_builders.h"

namespace gpureap::history {
namespace {

using testing::GiB;
using testing::holder;
using testing::listed;
using testing::make_snapshot;
using testing::proc;

const auto kJournalStart =
    std::chrono::system_clock::time_point(std::chrono::seconds(1'700'000'000));

JournalTime at(int s) {
  return kJournalStart + std::chrono::seconds(s);
}

core::Snapshot sample(int s, std::vector<core::HostProcess> ps,
                      std::vector<core::DriverProcess> on_gpu0) {
  auto snap = make_snapshot(std::move(ps), {testing::gpu(0, 0, 10 * GiB, std::move(on_gpu0))},
                            {.at = at(s)});
  return snap;
}

std::vector<JournalEventKind> kinds_of(const JournalView& v, pid_t pid) {
  std::vector<JournalEventKind> out;
  for (const auto& e : v.events)
    if (e.pid == pid) out.push_back(e.kind);
  return out;
}

const JournalLane* lane_of(const JournalView& v, pid_t pid) {
  for (const auto& l : v.lanes)
    if (l.pid == pid) return &l;
  return nullptr;
}

TEST(HistoryJournal, ATrainersWorkerAndGhostAndTheMemoryComingBack) {
  Journal j;
  auto trainer = holder(100, 1, 100);
  trainer.stat.comm = "trainer";
  auto worker = holder(101, 100, 100);
  j.record(sample(0, {trainer, worker}, {listed(100, 8 * GiB)}));
  j.record(sample(1, {trainer, worker}, {listed(100, 8 * GiB)}));
  auto orphan = worker;
  orphan.stat.ppid = 1;
  j.record(sample(2, {orphan}, {listed(100, 8 * GiB)}));
  j.record(sample(3, {orphan}, {listed(100, 8 * GiB)}));
  j.record(sample(4, {}, {}));

  auto v = j.query(at(0), at(10));
  const auto* t = lane_of(v, 100);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->comm, "trainer") << "the ghost keeps the name it had alive";
  EXPECT_EQ(t->start_ticks, 1100u) << "one lane: the living one, continued";
  EXPECT_EQ(t->first_seen, at(0));
  EXPECT_EQ(t->last_seen, at(3));
  EXPECT_EQ(t->ghost, at(2));
  EXPECT_EQ(t->peak_bytes, 8 * GiB);
  EXPECT_FALSE(t->open);
  EXPECT_EQ(kinds_of(v, 100),
            (std::vector<JournalEventKind>{JournalEventKind::Fork, JournalEventKind::Exit,
                                           JournalEventKind::Ghost, JournalEventKind::MemoryBack}));
  const auto* w = lane_of(v, 101);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->first_seen, at(1)) << "followed from the sample after its parent's lane began";
  EXPECT_EQ(w->ppid, 100);
  EXPECT_EQ(w->last_seen, at(3));
  EXPECT_EQ(w->exited, at(4));
  EXPECT_EQ(kinds_of(v, 101), std::vector<JournalEventKind>{JournalEventKind::Exit});
  EXPECT_EQ(v.lanes.size(), 2u);
  // A window before anything happened has nothing.
  EXPECT_TRUE(j.query(at(-10), at(-1)).lanes.empty());
}

// Where the daemon follows the kernel's events, a lane starts at its open or fork and ends at
// its final close; a moment outside the two samples around it (a PID handed out again, a close
// from before) is not believed, and without events the samples' times stand.
TEST(HistoryJournal, TheKernelsEventsTimeALanesStartAndEnd) {
  using std::chrono::milliseconds;
  std::map<pid_t, JournalTime> began{{100, at(0) + milliseconds(300)},
                                     {101, at(1) + milliseconds(500)},
                                     {102, at(0) + milliseconds(100)}};
  std::map<pid_t, JournalTime> released{{100, at(2) + milliseconds(700)}, {102, at(9)}};
  auto lookup = [](const std::map<pid_t, JournalTime>& m) {
    return [&m](pid_t pid) -> std::optional<JournalTime> {
      auto it = m.find(pid);
      if (it == m.end()) return std::nullopt;
      return it->second;
    };
  };
  const EventClock clock{lookup(began), lookup(released)};
  Journal j;
  auto trainer = holder(100, 1, 100);
  auto worker = holder(101, 100, 100);
  auto recycled = holder(102, 1, 102);
  j.record(sample(0, {}, {}), clock);
  j.record(sample(1, {trainer}, {listed(100, 4 * GiB)}), clock);
  j.record(sample(2, {trainer, worker, recycled}, {listed(100, 4 * GiB), listed(102, GiB)}), clock);
  auto idle = proc(100, 1, 100);  // alive, its GPU files closed
  j.record(sample(3, {idle, worker}, {}), clock);
  j.record(sample(4, {idle}, {}), clock);

  auto v = j.query(at(0), at(10));
  const auto* t = lane_of(v, 100);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->first_seen, at(0) + milliseconds(300)) << "its open, not the sample after";
  EXPECT_EQ(t->last_seen, at(2) + milliseconds(700)) << "its final close";
  const auto* w = lane_of(v, 101);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->first_seen, at(1) + milliseconds(500)) << "the fork";
  EXPECT_EQ(w->last_seen, at(3)) << "no close event: the last sample that saw it";
  EXPECT_EQ(w->exited, at(4));
  const auto* r = lane_of(v, 102);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->first_seen, at(2)) << "an open before the previous sample is another process's";
  EXPECT_EQ(r->last_seen, at(2)) << "a close after this sample is not this one's";
  bool fork_at_the_fork = false, close_at_the_close = false;
  for (const auto& e : v.events) {
    if (e.kind == JournalEventKind::Fork && e.other == 101)
      fork_at_the_fork = e.at == at(1) + milliseconds(500);
    if (e.kind == JournalEventKind::Close && e.pid == 100)
      close_at_the_close = e.at == at(2) + milliseconds(700);
  }
  EXPECT_TRUE(fork_at_the_fork);
  EXPECT_TRUE(close_at_the_close);
}

TEST(HistoryJournal, ARanksExitSaysWhichRankOfWhichJobAndHow) {
  Journal j;
  auto rank = [](pid_t pid) { return holder(pid, 500, 500); };
  const auto launcher = proc(500, 1, 500);
  j.record(sample(0, {launcher, rank(501), rank(502), rank(503), rank(504)},
                  {listed(501, GiB), listed(502, GiB), listed(503, GiB), listed(504, GiB)}));
  // Rank 3 (504) killed; rank 2 (503) a healthy holder that merely let go, and 501's exit is
  // no rank's: the daemon recorded none for it.
  auto s = make_snapshot(
      {launcher, rank(501), rank(502), proc(504, 500, 500, 'Z')},
      {testing::gpu(0, 0, 10 * GiB, {listed(501, GiB), listed(502, GiB)})},
      {.at = at(5),
       .rank_exits = {{500, 1500, 504, 1504, 3u, 100, 9}, {500, 1500, 503, 999, 2u, 100, 9}}});
  j.record(s);
  auto v = j.query(at(0), at(10));
  std::map<pid_t, std::string> texts;
  for (const auto& e : v.events)
    if (e.kind == JournalEventKind::Exit) texts[e.pid] = e.text;
  EXPECT_EQ(texts,
            (std::map<pid_t, std::string>{{503, ""}, {504, "rank 3 of job PID 500, SIGKILL"}}));
}

TEST(HistoryJournal, AStoppedHolderAndWhoSignalledIt) {
  Journal j;
  auto job = holder(200, 1, 200);
  j.record(sample(0, {job}, {listed(200, 4 * GiB)}));
  auto stopped = job;
  stopped.stat.state = 'T';
  j.record(sample(1, {stopped}, {listed(200, 4 * GiB)}));
  Announcement a;
  a.at = at(2);
  a.uid = 0;
  a.user = "root";
  a.command = "gpureap kill 200";
  a.signal = "SIGTERM";
  a.targets = {{200, 1200, "p200", 0}};
  j.announce(a);
  j.record(sample(2, {stopped}, {listed(200, 4 * GiB)}));

  auto v = j.query(at(0), at(10));
  const auto* l = lane_of(v, 200);
  ASSERT_TRUE(l);
  EXPECT_TRUE(l->stopped);
  EXPECT_TRUE(l->open);
  ASSERT_EQ(kinds_of(v, 200),
            (std::vector<JournalEventKind>{JournalEventKind::Stopped, JournalEventKind::Signal}));
  const auto& signal = v.events.back();
  EXPECT_EQ(signal.user, "root");
  EXPECT_EQ(signal.command, "gpureap kill 200");
  EXPECT_EQ(signal.text, "SIGTERM");
  EXPECT_EQ(signal.gpu, 0u);
}

TEST(HistoryJournal, DriverErrorsAreKeptOnceEach) {
  Journal j;
  core::KernelGpuEvent x;
  x.vendor = "nvidia";
  x.kind = "xid";
  x.label = "Xid";
  x.code = 31;
  x.name = "GPU memory page fault";
  x.gpu = 0;
  x.seq = 7;
  x.time = at(5);
  x.pid = 4242;
  j.record_kernel_events({x});
  j.record_kernel_events({x});  // the follower hands the log again: nothing new
  auto v = j.query(at(0), at(10));
  ASSERT_EQ(v.events.size(), 1u);
  EXPECT_EQ(v.events[0].kind, JournalEventKind::GpuError);
  EXPECT_EQ(v.events[0].pid, 4242);
  EXPECT_EQ(v.events[0].text, "Xid 31 (GPU memory page fault)");
}

TEST(HistoryJournal, ItIsBoundedByItsWindowAndCaps) {
  Journal j({std::chrono::seconds(60), 8, 16});
  for (int s = 0; s < 40; ++s) {
    auto p = holder(300 + s, 1, 300 + s);
    j.record(sample(s, {p}, {listed(300 + s, GiB)}));
  }
  auto v = j.query(at(-100), at(100));
  EXPECT_LE(v.lanes.size(), 8u);
  EXPECT_LE(v.events.size(), 16u);
  EXPECT_EQ(lane_of(v, 339)->open, true) << "the lane open now stays";
  j.record(sample(200, {}, {}));
  EXPECT_LE(j.query(at(0), at(300)).lanes.size(), 1u) << "past the window, closed lanes go";
}

}  // namespace
}  // namespace gpureap::history

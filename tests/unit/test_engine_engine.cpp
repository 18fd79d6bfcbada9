// The sampling engine: collections off the caller's thread, a wedged driver never blocks it
// behind the watchdog, a stuck collection is seen by time and a bounded stop leaves it behind.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <filesystem>
#include <future>
#include <mutex>
#include <thread>

#include "backend/backend_set.h"
#include "engine/engine.h"

namespace gpureap::engine {
namespace {

using namespace std::chrono_literals;

// A driver that blocks while `blocked` is set, like a wedged NVML call.
struct Gate {
  std::mutex m;
  std::condition_variable cv;
  bool blocked = false;
  int calls = 0;
  int returned = 0;
};

class GatedBackend : public backend::GpuBackend {
 public:
  explicit GatedBackend(std::shared_ptr<Gate> g) : g_(std::move(g)) {}
  core::BackendReport collect() override {
    std::unique_lock lock(g_->m);
    ++g_->calls;
    g_->cv.wait(lock, [&] { return !g_->blocked; });
    ++g_->returned;
    core::BackendReport r;
    r.available = true;
    r.driver_version = "test-" + std::to_string(g_->calls);
    return r;
  }

 private:
  std::shared_ptr<Gate> g_;
};

void set_blocked(Gate& g, bool blocked) {
  std::lock_guard lock(g.m);
  g.blocked = blocked;
  g.cv.notify_all();
}

int calls(Gate& g) {
  std::lock_guard lock(g.m);
  return g.calls;
}

// Polls `done` up to `limit`: generous, a loaded machine scans /proc slowly; it costs time only
// when the test fails anyway.
template <class F>
bool eventually(F done, std::chrono::milliseconds limit = 60s) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return done();
}

class Recorder : public CollectionConsumer {
 public:
  void on_collection(const Collection& c) override {
    std::lock_guard lock(m);
    sequences.push_back(c.sequence);
  }
  std::vector<uint64_t> seen() {
    std::lock_guard lock(m);
    return sequences;
  }
  std::mutex m;
  std::vector<uint64_t> sequences;
};

// The gated backend registered as a driver library, behind a watchdog of its own, as NVML is.
std::shared_ptr<backend::BackendSet> gated_driver(std::shared_ptr<Gate> gate,
                                                  backend::WatchdogOptions watch) {
  backend::Registry registry{{"nvml", "nvidia", true, [gate](const backend::BackendSettings&) {
                                return std::make_unique<GatedBackend>(gate);
                              }}};
  return backend::BackendSet::make(registry, {}, watch);
}

class EngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpureap-engine-XXXXXX";
    dev_ = ::mkdtemp(tmpl);
  }
  void TearDown() override { std::filesystem::remove_all(dev_); }

  // An engine reading these backends through the collector, as every view does.
  std::unique_ptr<Engine> make(std::shared_ptr<backend::BackendSet> backends, Cadence cadence) {
    auto c = collect::Collector::open({"/proc", dev_}, std::move(backends));
    EXPECT_TRUE(c.ok());
    return std::make_unique<Engine>(std::move(*c), cadence);
  }
  // A backend called directly, with no watchdog.
  std::unique_ptr<Engine> make(std::shared_ptr<backend::GpuBackend> b, Cadence cadence) {
    return make(std::make_shared<backend::BackendSet>(
                    std::vector<std::shared_ptr<backend::GpuBackend>>{std::move(b)}),
                cadence);
  }
  std::string dev_;
};

TEST_F(EngineTest, PublishesCollectionsOffTheCallersThreadToConsumersInOrder) {
  auto gate = std::make_shared<Gate>();
  auto e = make(std::make_shared<GatedBackend>(gate), Cadence{50ms});
  auto recorder = std::make_shared<Recorder>();
  e->add_consumer(recorder);
  EXPECT_EQ(e->published().rounds, 0u);
  EXPECT_EQ(e->latest(), nullptr);
  e->start();
  ASSERT_TRUE(eventually([&] { return e->published().rounds >= 2; }));
  auto c = e->latest();
  ASSERT_NE(c, nullptr);
  ASSERT_NE(c->snapshot, nullptr);
  EXPECT_NE(c->snapshot->find(::getpid()), nullptr);  // /proc was scanned
  EXPECT_TRUE(c->snapshot->drivers.any_available());
  EXPECT_TRUE(c->full_scan);             // the views scan everyone every time
  EXPECT_TRUE(c->host.mem_total_bytes);  // collected with it
  EXPECT_EQ(c->ipc_residue, nullptr);    // not asked for
  EXPECT_TRUE(e->stop(60s));             // generous: a loaded machine scans /proc slowly
  auto seen = recorder->seen();
  ASSERT_GE(seen.size(), 2u);
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], i + 1);
  auto rounds = e->published().rounds;
  // Stopped means stopped: while a running engine on the same cadence collects three times,
  // the stopped one collects nothing.
  auto witness = make(std::make_shared<GatedBackend>(std::make_shared<Gate>()), Cadence{50ms});
  witness->start();
  EXPECT_TRUE(eventually([&] { return witness->published().rounds >= 3; }));
  EXPECT_TRUE(witness->stop(60s));
  EXPECT_EQ(e->published().rounds, rounds);
}

TEST_F(EngineTest, CollectOnceOnTheCallersThreadWithIpcResidueWhenAsked) {
  auto gate = std::make_shared<Gate>();
  auto e = make(std::make_shared<GatedBackend>(gate), Cadence{1s, 0ms, 0ms, std::nullopt, true});
  e->collect_once();
  auto c = e->latest();
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->sequence, 1u);
  EXPECT_TRUE(c->holder_scan && c->full_scan);
  EXPECT_NE(c->ipc_residue, nullptr);
  ASSERT_TRUE(c->driver.seconds);
  ASSERT_TRUE(c->scan.seconds);
  EXPECT_EQ(c->driver.errors, 0u);
  EXPECT_EQ(calls(*gate), 1);  // the driver read once, through the engine's driver
}

// The daemon keeps several snapshots at once (the latest, the one before, doctor's anchors):
// those taken from one scan of /proc hold one process list, not a copy each.
TEST_F(EngineTest, SnapshotsOfOneScanShareItsProcessList) {
  auto gate = std::make_shared<Gate>();
  auto e = make(std::make_shared<GatedBackend>(gate), Cadence{1s, 1h, 1h});
  e->collect_once();
  auto first = e->latest();
  e->collect_once();
  auto second = e->latest();
  e->collect_once();
  auto third = e->latest();
  ASSERT_TRUE(first && second && third);
  EXPECT_TRUE(first->full_scan);
  EXPECT_FALSE(second->holder_scan);  // the holder scan is not due for an hour
  EXPECT_FALSE(third->holder_scan);
  EXPECT_NE(first->snapshot, second->snapshot);
  EXPECT_NE(first->snapshot->find(::getpid()), nullptr);
  // A zombie anywhere on the machine is read again at each collection until reaped
  // (engine/ended_processes): its reap rightly gives the next snapshot a list of its own.
  auto has_zombie = [](const core::Snapshot& s) {
    return std::any_of(s.proc.processes.begin(), s.proc.processes.end(),
                       [](const core::HostProcess& p) { return p.stat.is_zombie(); });
  };
  if (has_zombie(*first->snapshot) || has_zombie(*second->snapshot))
    GTEST_SKIP() << "another process's zombie was read again between the collections";
  EXPECT_TRUE(first->snapshot->proc.processes.shares_with(second->snapshot->proc.processes));
  EXPECT_TRUE(second->snapshot->proc.processes.shares_with(third->snapshot->proc.processes));
  EXPECT_EQ(&first->snapshot->proc.processes[0], &third->snapshot->proc.processes[0]);
}

TEST_F(EngineTest, EachScanGivesItsSnapshotANewProcessList) {
  auto gate = std::make_shared<Gate>();
  auto e = make(std::make_shared<GatedBackend>(gate), Cadence{1s});  // every collection scans
  e->collect_once();
  auto first = e->latest();
  e->collect_once();
  auto second = e->latest();
  ASSERT_TRUE(first && second);
  EXPECT_TRUE(second->holder_scan);
  EXPECT_FALSE(first->snapshot->proc.processes.shares_with(second->snapshot->proc.processes));
  EXPECT_NE(second->snapshot->find(::getpid()), nullptr);
}

TEST_F(EngineTest, FreshWaitsForACollectionThatBeganAfterTheCall) {
  auto gate = std::make_shared<Gate>();
  auto e = make(std::make_shared<GatedBackend>(gate), Cadence{0ms});  // only when asked
  EXPECT_EQ(e->fresh(100ms), nullptr);                                // not started
  e->start();
  // Interval 0: nothing periodic, while an engine collecting every 50 ms collects three times.
  auto witness = make(std::make_shared<GatedBackend>(std::make_shared<Gate>()), Cadence{50ms});
  witness->start();
  EXPECT_TRUE(eventually([&] { return witness->published().rounds >= 3; }));
  EXPECT_TRUE(witness->stop(60s));
  EXPECT_EQ(calls(*gate), 0);
  auto first = e->fresh(60s);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->sequence, 1u);
  auto second = e->fresh(60s);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second->sequence, 2u);
  EXPECT_GE(second->began, first->ended);
  set_blocked(*gate, true);
  EXPECT_EQ(e->fresh(100ms), nullptr);  // none completes in time
  set_blocked(*gate, false);
  EXPECT_TRUE(e->stop(60s));
}

TEST_F(EngineTest, WakeCollectsNowAndNewerThanWaitsForIt) {
  auto gate = std::make_shared<Gate>();
  auto e = make(std::make_shared<GatedBackend>(gate), Cadence{1h});
  e->start();
  auto first = e->newer_than(0, 60s);  // the first collection comes at once
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(e->newer_than(first->sequence, 100ms), nullptr);  // the next in an hour
  e->wake();
  auto next = e->newer_than(first->sequence, 60s);
  ASSERT_NE(next, nullptr);
  EXPECT_EQ(next->sequence, first->sequence + 1);
  EXPECT_TRUE(e->stop(60s));
}

TEST_F(EngineTest, AStuckCollectionIsSeenByTimeAndABoundedStopDoesNotWaitForIt) {
  auto gate = std::make_shared<Gate>();
  set_blocked(*gate, true);
  // No deadline in between: the collection itself hangs.
  auto e = make(std::make_shared<GatedBackend>(gate), Cadence{50ms});
  e->start();
  ASSERT_TRUE(eventually([&] {
    auto busy = e->busy_for();
    return busy && *busy > 200ms;
  }));
  EXPECT_EQ(e->published().rounds, 0u);
  // The collection stays stuck until the test lets it go: a stop that waited for it would not
  // return (and is let go after a minute, to fail rather than hang).
  auto stopping = std::async(std::launch::async, [&] { return e->stop(100ms); });
  const bool returned = stopping.wait_for(60s) == std::future_status::ready;
  if (!returned) set_blocked(*gate, false);
  EXPECT_TRUE(returned) << "the bounded stop waited for the stuck collection";
  EXPECT_FALSE(stopping.get());  // left behind, not waited for
  e.reset();
  set_blocked(*gate, false);  // let the abandoned thread finish before the test ends
  ASSERT_TRUE(eventually([&] {
    std::lock_guard lock(gate->m);
    return gate->returned == 1;
  }));
}

TEST_F(EngineTest, BehindTheWatchdogCollectingGoesOnWhileTheDriverHangs) {
  auto gate = std::make_shared<Gate>();
  backend::WatchdogOptions watch;
  watch.timeout = 100ms;
  watch.first_backoff = 1h;  // one stuck call: the gate counts it alone
  auto deadline = gated_driver(gate, watch);
  auto e = make(deadline, Cadence{50ms});
  e->start();
  ASSERT_TRUE(eventually([&] { return e->published().rounds >= 1; }));
  set_blocked(*gate, true);
  ASSERT_TRUE(eventually([&] {
    auto l = e->latest();
    return l &&
           l->snapshot->drivers.backends.at(0).error_code == core::BackendErrorCode::NotAnswering;
  }));
  EXPECT_TRUE(e->latest()->driver_timed_out);
  uint64_t seen = e->published().rounds;
  ASSERT_TRUE(eventually([&] { return e->published().rounds > seen + 1; }));  // /proc stays live
  EXPECT_TRUE(e->driver().down_for());
  EXPECT_TRUE(e->driver().stuck());
  EXPECT_TRUE(e->stop(60s));  // generous: a loaded machine scans /proc slowly
  set_blocked(*gate, false);
  ASSERT_TRUE(eventually([&] { return !deadline->threads_stuck(); }));
}

TEST_F(EngineTest, AnOwnWatchdogIsInterruptedByStop) {
  auto gate = std::make_shared<Gate>();
  backend::WatchdogOptions watch;
  watch.timeout = 1h;  // only an interrupt ends the wait
  auto e = make(gated_driver(gate, watch), Cadence{50ms});
  set_blocked(*gate, true);
  e->start();
  ASSERT_TRUE(eventually([&] { return calls(*gate) == 1; }));
  // The read waiting for the driver returned, long before the watchdog's hour: interrupted.
  EXPECT_TRUE(e->stop(60s));
  EXPECT_EQ(e->latest(), nullptr);  // and nothing was published for it
  e.reset();
  set_blocked(*gate, false);
  ASSERT_TRUE(eventually([&] {
    std::lock_guard lock(gate->m);
    return gate->returned == 1;
  }));
}

}  // namespace
}  // namespace gpureap::engine

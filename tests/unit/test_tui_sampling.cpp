// The sampler and the deadline backend: a wedged driver never blocks the UI, and quitting never
// waits for it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>

#include "backend/backend_set.h"
#include "tui/host_stats.h"
#include "tui/sampler.h"

namespace gpureap::tui {
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

template <class F>
bool eventually(F done, std::chrono::milliseconds limit = 10s) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return done();
}

class TuiSampler : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpureap-tui-sampler-XXXXXX";
    dev_ = ::mkdtemp(tmpl);
  }
  void TearDown() override { std::filesystem::remove_all(dev_); }

  std::shared_ptr<const collect::Collector> collector(std::shared_ptr<backend::GpuBackend> b) {
    auto c = collect::Collector::open({"/proc", dev_},
                                      std::make_shared<backend::BackendSet>(
                                          std::vector<std::shared_ptr<backend::GpuBackend>>{b}));
    EXPECT_TRUE(c.ok());
    return std::make_shared<const collect::Collector>(std::move(*c));
  }
  std::string dev_;
};

TEST_F(TuiSampler, PublishesSnapshotsOffTheCallersThread) {
  auto gate = std::make_shared<Gate>();
  Sampler s(collector(std::make_shared<GatedBackend>(gate)), "/proc", 50ms);
  EXPECT_EQ(s.latest().generation, 0u);
  s.start();
  ASSERT_TRUE(eventually([&] { return s.latest().generation >= 2; }));
  auto sample = s.latest();
  ASSERT_NE(sample.snapshot, nullptr);
  EXPECT_NE(sample.snapshot->find(::getpid()), nullptr);  // /proc was scanned
  EXPECT_TRUE(sample.snapshot->drivers.any_available());
  EXPECT_TRUE(sample.host.mem_total_bytes);
  EXPECT_TRUE(s.stop(10s));  // generous: a loaded machine scans /proc slowly
}

TEST_F(TuiSampler, AStuckCollectionIsSeenByTimeAndStopDoesNotWaitForIt) {
  auto gate = std::make_shared<Gate>();
  set_blocked(*gate, true);
  // No deadline in between: the collection itself hangs.
  auto s =
      std::make_unique<Sampler>(collector(std::make_shared<GatedBackend>(gate)), "/proc", 50ms);
  s->start();
  ASSERT_TRUE(eventually([&] {
    auto busy = s->busy_for();
    return busy && *busy > 200ms;
  }));
  EXPECT_EQ(s->latest().generation, 0u);
  auto before = std::chrono::steady_clock::now();
  EXPECT_FALSE(s->stop(100ms));  // left behind, not waited for
  EXPECT_LT(std::chrono::steady_clock::now() - before, 5s);
  s.reset();
  set_blocked(*gate, false);  // let the abandoned thread finish before the test ends
  ASSERT_TRUE(eventually([&] {
    std::lock_guard lock(gate->m);
    return gate->returned == 1;
  }));
}

TEST_F(TuiSampler, BehindTheWatchdogSamplingGoesOnWhileTheDriverHangs) {
  auto gate = std::make_shared<Gate>();
  backend::WatchdogOptions watch;
  watch.timeout = 100ms;
  watch.first_backoff = 1h;  // one stuck call: the gate counts it alone
  backend::Registry registry{{"nvml", "nvidia", true, [gate](const backend::BackendSettings&) {
                                return std::make_unique<GatedBackend>(gate);
                              }}};
  auto drivers = backend::BackendSet::make(registry, {}, watch);
  auto c = collect::Collector::open({"/proc", dev_}, drivers);
  ASSERT_TRUE(c.ok());
  Sampler s(std::make_shared<const collect::Collector>(std::move(*c)), "/proc", 50ms);
  s.start();
  ASSERT_TRUE(eventually([&] { return s.latest().generation >= 1; }));
  set_blocked(*gate, true);
  ASSERT_TRUE(eventually([&] {
    auto l = s.latest();
    return l.snapshot && !l.snapshot->drivers.backends.empty() &&
           l.snapshot->drivers.backends[0].error_code == core::BackendErrorCode::NotAnswering;
  }));
  uint64_t seen = s.latest().generation;
  ASSERT_TRUE(eventually([&] { return s.latest().generation > seen + 1; }));  // /proc stays live
  EXPECT_TRUE(drivers->down_for());
  EXPECT_TRUE(drivers->threads_stuck());
  EXPECT_TRUE(s.stop(10s));  // generous: a loaded machine scans /proc slowly
  set_blocked(*gate, false);
  ASSERT_TRUE(eventually([&] { return !drivers->threads_stuck(); }));
}

TEST(TuiHostStats, ParsesLoadAndMemory) {
  HostStats h;
  parse_loadavg("0.52 1.61 10.70 2/1234 5678\n", h);
  EXPECT_DOUBLE_EQ(*h.load1, 0.52);
  EXPECT_DOUBLE_EQ(*h.load5, 1.61);
  EXPECT_DOUBLE_EQ(*h.load15, 10.70);
  parse_meminfo(
      "MemTotal:       65843036 kB\nMemFree:         1000 kB\nMemAvailable:   51234567 kB\n", h);
  EXPECT_EQ(h.mem_total_bytes, 65843036ull * 1024);
  EXPECT_EQ(h.mem_available_bytes, 51234567ull * 1024);
  HostStats bad;
  parse_loadavg("garbage", bad);
  parse_meminfo("MemTotal: lots\n", bad);
  EXPECT_FALSE(bad.load1);
  EXPECT_FALSE(bad.mem_total_bytes);
  HostStats none = read_host_stats("/nonexistent");
  EXPECT_FALSE(none.load1);
  EXPECT_FALSE(none.mem_total_bytes);
}

}  // namespace
}  // namespace gpureap::tui

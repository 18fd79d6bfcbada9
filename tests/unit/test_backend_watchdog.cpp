#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "backend/watchdog.h"

namespace gpureap::backend {
namespace {

using namespace std::chrono_literals;

// Calls wait here while it is closed: a wedged driver, until the test opens it.
struct Gate {
  std::mutex m;
  std::condition_variable cv;
  bool open = true;
  void wait() {
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return open; });
  }
  void set(bool o) {
    std::lock_guard lock(m);
    open = o;
    cv.notify_all();
  }
};

class FakeBackend : public backend::GpuBackend {
 public:
  FakeBackend(int id, std::shared_ptr<Gate> gate) : id_(id), gate_(std::move(gate)) {}
  core::BackendReport collect() override {
    gate_->wait();
    core::BackendReport r;
    r.available = true;
    r.driver_version = "instance-" + std::to_string(id_);
    return r;
  }

 private:
  int id_;
  std::shared_ptr<Gate> gate_;
};

class BackendWatchdogTest : public ::testing::Test {
 protected:
  void TearDown() override { gate->set(true); }  // let stuck calls return before the test ends

  BackendFactory factory() {
    return [this] { return std::make_shared<FakeBackend>(++instances, gate); };
  }
  WatchdogOptions options(std::chrono::milliseconds backoff = 0ms, unsigned max_stuck = 4) {
    WatchdogOptions o;
    o.timeout = 100ms;
    o.first_backoff = backoff;
    o.max_backoff = backoff;
    o.max_stuck = max_stuck;
    return o;
  }
  bool wait_stuck(const BackendWatchdog& w, unsigned n) {
    for (int i = 0; i < 6000 && w.stuck() != n; ++i) std::this_thread::sleep_for(10ms);
    return w.stuck() == n;
  }

  std::shared_ptr<Gate> gate = std::make_shared<Gate>();
  std::atomic<int> instances{0};
};

TEST_F(BackendWatchdogTest, AnsweringDriverKeepsOneInstance) {
  BackendWatchdog w(factory(), options());
  for (int i = 0; i < 3; ++i) {
    auto r = w.collect();
    EXPECT_FALSE(r.timed_out);
    EXPECT_TRUE(r.report.available);
    EXPECT_EQ(r.report.driver_version, "instance-1");
  }
  EXPECT_EQ(instances, 1);
  EXPECT_EQ(w.stuck(), 0u);
}

TEST_F(BackendWatchdogTest, WedgedCallIsAbandonedAndAFreshInstanceRecovers) {
  BackendWatchdog w(factory(), options());
  gate->set(false);
  EXPECT_FALSE(w.down_for());
  auto down = w.collect();
  EXPECT_TRUE(down.timed_out);
  EXPECT_FALSE(down.report.available);
  EXPECT_EQ(down.report.error_code, core::BackendErrorCode::NotAnswering);
  EXPECT_TRUE(w.down_for());
  EXPECT_NE(down.report.error->find("did not answer within 100ms"), std::string::npos)
      << *down.report.error;
  EXPECT_EQ(w.stuck(), 1u);

  // The driver answers new calls again; the first call stays stuck until the gate opens.
  auto fresh = std::make_shared<Gate>();
  std::swap(gate, fresh);
  auto up = w.collect();
  EXPECT_FALSE(up.timed_out);
  EXPECT_TRUE(up.report.available);
  EXPECT_EQ(up.report.driver_version, "instance-2");
  EXPECT_FALSE(w.down_for());  // answering again, though a call is still stuck
  EXPECT_EQ(w.stuck(), 1u);
  fresh->set(true);  // the stuck call returns at last: its thread ends
  EXPECT_TRUE(wait_stuck(w, 0));
}

TEST_F(BackendWatchdogTest, ATimeoutSetFromAnotherThreadAppliesToTheNextCall) {
  BackendWatchdog w(factory(), options());
  gate->set(false);
  std::thread([&] { w.set_timeout(1ms); }).join();
  auto down = w.collect();
  EXPECT_NE(down.report.error->find("did not answer within 1ms"), std::string::npos)
      << *down.report.error;
  gate->set(true);
  EXPECT_TRUE(wait_stuck(w, 0));
}

TEST_F(BackendWatchdogTest, BacksOffBeforeTheNextAttempt) {
  BackendWatchdog w(factory(), options(1h));
  gate->set(false);
  EXPECT_TRUE(w.collect().timed_out);
  auto again = w.collect();
  EXPECT_TRUE(again.timed_out);
  EXPECT_NE(again.report.error->find("retries in 1h"), std::string::npos) << *again.report.error;
  EXPECT_EQ(instances, 1);  // no new call during the back-off
}

TEST_F(BackendWatchdogTest, StuckCallsAreBounded) {
  BackendWatchdog w(factory(), options(0ms, 2));
  gate->set(false);
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(w.collect().timed_out);
  EXPECT_EQ(instances, 2);
  EXPECT_EQ(w.stuck(), 2u);
  auto r = w.collect();
  EXPECT_NE(r.report.error->find("2 calls into the GPU driver have not returned"),
            std::string::npos)
      << *r.report.error;
  // Once they return, gpureap calls the driver again.
  gate->set(true);
  ASSERT_TRUE(wait_stuck(w, 0));
  auto up = w.collect();
  EXPECT_TRUE(up.report.available);
  EXPECT_EQ(instances, 3);
}

}  // namespace
}  // namespace gpureap::backend

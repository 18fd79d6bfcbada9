// top's feed of the daemon's snapshots: published as the engine publishes, paced by the
// interval, woken after a kill, and given up (for top's own engine) when the daemon goes away.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "backend/backend_set.h"
#include "snapshot_builders.h"
#include "tui/daemon_feed.h"

namespace gpureap::tui {
namespace {

using namespace gpureap::testing;
using namespace std::chrono_literals;

std::shared_ptr<const collect::Collector> host_collector() {
  auto drivers = backend::BackendSet::make(backend::Registry{}, {}, backend::WatchdogOptions{});
  auto c =
      collect::Collector::open({"/proc", std::filesystem::temp_directory_path().string()}, drivers);
  EXPECT_TRUE(c.ok());
  return std::make_shared<const collect::Collector>(std::move(*c));
}

// Answers `answers` times with a snapshot whose one holder is the answer's number, then fails.
struct Daemon {
  std::atomic<int> asked{0};
  int answers;
  explicit Daemon(int n) : answers(n) {}
  SnapshotFetch fetch() {
    return [this]() -> std::optional<core::Snapshot> {
      int n = ++asked;
      if (n > answers) return std::nullopt;
      return make_snapshot({holder(100 + n, 1, 100 + n)}, {});
    };
  }
};

// Polls `done` up to a minute: a loaded machine runs the feed's thread late.
bool wait_until(const std::function<bool()>& done) {
  const auto until = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return done();
}

TEST(TuiDaemonFeed, PublishesEachAnswerAndGivesUpWhenTheDaemonGoesAway) {
  Daemon daemon(3);
  DaemonFeed feed(daemon.fetch(), host_collector(), 20ms);
  ASSERT_TRUE(feed.start());
  // The first answer is published before start() returns.
  auto first = feed.published();
  ASSERT_TRUE(first.latest);
  EXPECT_EQ(first.rounds, 1u);
  EXPECT_EQ(first.latest->sequence, 1u);
  ASSERT_NE(first.latest->snapshot->find(101), nullptr);
  EXPECT_TRUE(first.latest->host.mem_total_bytes);  // read here, from this /proc
  ASSERT_TRUE(wait_until([&] { return feed.failed(); }));
  // What the daemon last answered stays published; nothing after the failure.
  auto last = feed.published();
  EXPECT_EQ(last.rounds, 3u);
  EXPECT_NE(last.latest->snapshot->find(103), nullptr);
  EXPECT_EQ(daemon.asked.load(), 4);
}

TEST(TuiDaemonFeed, ADaemonThatDoesNotAnswerAtFirstStartsNothing) {
  Daemon daemon(0);
  DaemonFeed feed(daemon.fetch(), host_collector(), 20ms);
  EXPECT_FALSE(feed.start());
  EXPECT_FALSE(feed.published().latest);
  // No thread asks again: while a started feed on the same interval asks three times more.
  Daemon answering(100);
  DaemonFeed witness(answering.fetch(), host_collector(), 20ms);
  ASSERT_TRUE(witness.start());
  EXPECT_TRUE(wait_until([&] { return answering.asked.load() >= 4; }));
  witness.stop();
  EXPECT_EQ(daemon.asked.load(), 1);
  DaemonFeed none({}, host_collector(), 20ms);
  EXPECT_FALSE(none.start());
}

TEST(TuiDaemonFeed, WakeAsksAtOnceInsteadOfAtTheNextTick) {
  Daemon daemon(100);
  DaemonFeed feed(daemon.fetch(), host_collector(), 1h);
  ASSERT_TRUE(feed.start());
  EXPECT_EQ(feed.published().rounds, 1u);
  feed.wake();
  ASSERT_TRUE(wait_until([&] { return feed.published().rounds == 2; }));
  feed.stop();  // returns although the next tick is an hour away
  EXPECT_FALSE(feed.failed());
}

}  // namespace
}  // namespace gpureap::tui

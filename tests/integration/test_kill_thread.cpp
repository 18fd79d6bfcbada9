// `gpureap kill TID` where TID is a thread of a live process, not its leader: /proc/TID answers
// though /proc does not list it. gpureap signals whole processes, so it plans nothing, for the
// thread nor for its process (which the user must name if meant), and says whose thread it is.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

#include "support.h"

namespace gpureap::testing {
namespace kill_thread {

std::atomic<pid_t> g_tid{0};

void* park(void*) {
  g_tid = static_cast<pid_t>(::syscall(SYS_gettid));
  for (;;) ::pause();
}

// A GPU holder named `threadjob` that blocks every signal (one sent would stay pending) and runs
// a second thread; its thread id.
struct ThreadedHolder {
  FakeDevRoot dev;
  Ready ready;
  Child process{[this] {
    ::prctl(PR_SET_NAME, "threadjob");
    block_all_signals();  // the thread inherits the mask
    hold(dev.dev("nvidia0"));
    pthread_t t;
    if (::pthread_create(&t, nullptr, park, nullptr) != 0) ::_exit(96);
    while (g_tid == 0) ::sched_yield();
    ready.send(g_tid);
  }};
  pid_t tid = static_cast<pid_t>(ready.receive());
};

// Every note of a gpureap.kill/v1 document, one per line.
std::string notes_of(const nlohmann::json& doc) {
  std::string out;
  for (const auto& n : doc["plan"]["notes"]) out += n.get<std::string>() + "\n";
  return out;
}

void expect_nothing_planned(const nlohmann::json& doc) {
  EXPECT_EQ(doc["plan"]["targets"], nlohmann::json::array()) << doc.dump(2);
  EXPECT_EQ(doc["plan"]["gone"], nlohmann::json::array()) << doc.dump(2);
  EXPECT_EQ(doc["executed"], false);
  EXPECT_EQ(doc["outcomes"], nlohmann::json::array());
}

TEST(KillThread, AThreadIdIsToldAsItsProcessAndNothingIsPlanned) {
  ThreadedHolder h;
  ASSERT_NE(h.tid, h.process.pid());
  const std::string tid = std::to_string(h.tid), pid = std::to_string(h.process.pid());
  auto r = run_gpureap(kill_args(h.dev, {tid, "--yes"}));
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;  // kill: nothing matched
  auto doc = parse_output(r);
  expect_nothing_planned(doc);
  const std::string notes = notes_of(doc);
  EXPECT_NE(notes.find("TID " + tid + " is a thread of process " + pid + " (threadjob)"),
            std::string::npos)
      << notes;
  EXPECT_NE(notes.find("`gpureap kill " + pid + "`"), std::string::npos) << notes;
  EXPECT_EQ(notes.find("no such process"), std::string::npos) << notes;
  EXPECT_TRUE(no_signal_pending(h.process.pid()));
  EXPECT_TRUE(is_alive(h.process.pid()));
}

TEST(KillThread, DryRunSaysTheSameInTextAndJson) {
  ThreadedHolder h;
  const std::string tid = std::to_string(h.tid), pid = std::to_string(h.process.pid());
  auto json = run_gpureap(kill_args(h.dev, {tid, "--dry-run"}));
  EXPECT_EQ(json.exit_code, 3) << json.out << json.err;
  auto doc = parse_output(json);
  expect_nothing_planned(doc);
  EXPECT_NE(notes_of(doc).find("is a thread of process " + pid), std::string::npos) << json.out;

  auto text =
      run_gpureap({"kill", tid, "--dry-run", "--dev-root", h.dev.path(), "--nvml-library", kNoNvml},
                  {"NO_COLOR=1", "COLUMNS=200"});
  EXPECT_EQ(text.exit_code, 3) << text.out << text.err;
  EXPECT_NE(text.out.find("TID " + tid + " is a thread of process " + pid + " (threadjob)"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("gpureap kill " + pid), std::string::npos) << text.out;
  EXPECT_TRUE(no_signal_pending(h.process.pid()));
}

// The thread's process is not reached through its tree or group either: the thread chose
// nothing to widen.
TEST(KillThread, TreeAndGroupWidenNothingFromAThread) {
  ThreadedHolder h;
  const std::string tid = std::to_string(h.tid);
  for (const char* widen : {"--tree", "--group"}) {
    SCOPED_TRACE(widen);
    auto r = run_gpureap(kill_args(h.dev, {tid, widen, "--yes"}));
    EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
    expect_nothing_planned(parse_output(r));
  }
  EXPECT_TRUE(no_signal_pending(h.process.pid()));
  EXPECT_TRUE(is_alive(h.process.pid()));
}

}  // namespace kill_thread
}  // namespace gpureap::testing

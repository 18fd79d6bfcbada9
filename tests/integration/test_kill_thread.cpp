// `gpureap kill TID` where TID is a thread of a live process, not its leader: /proc/TID answers
// though /proc does not list it. gpureap signals whole processes, so it plans nothing, for the
// thread nor for its process (which the user must name if meant), and says whose thread it is.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
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

// What gpureap says of a thread `tid` of process `pid` named threadjob: whose thread it is, and
// what to type instead; said once, first, and never as a PID that matched nothing.
std::string thread_sentence(const std::string& tid, const std::string& pid) {
  return "TID " + tid + " is a thread of process " + pid +
         " (threadjob), not a process; gpureap signals whole processes, so nothing was chosen "
         "for it: `gpureap kill " +
         pid + "` ends that process, all its threads with it";
}

void expect_nothing_planned(const nlohmann::json& doc) {
  EXPECT_EQ(doc["plan"]["targets"], nlohmann::json::array()) << doc.dump(2);
  EXPECT_EQ(doc["plan"]["gone"], nlohmann::json::array()) << doc.dump(2);
  EXPECT_EQ(doc["executed"], false);
  EXPECT_EQ(doc["outcomes"], nlohmann::json::array());
}

// The whole plan of a gpureap.kill/v1 document for the thread alone: no selection (no process
// was asked for), the thread with its process, its sentence the only note.
void expect_told_once(const nlohmann::json& doc, pid_t tid, pid_t pid) {
  expect_nothing_planned(doc);
  const auto& plan = doc["plan"];
  EXPECT_EQ(plan["selection"], "") << doc.dump(2);
  EXPECT_EQ(plan["threads"],
            nlohmann::json::array({{{"tid", tid}, {"process", pid}, {"comm", "threadjob"}}}))
      << doc.dump(2);
  EXPECT_EQ(plan["notes"],
            nlohmann::json::array({thread_sentence(std::to_string(tid), std::to_string(pid))}))
      << doc.dump(2);
  EXPECT_EQ(doc["summary"]["exit_code"], 3) << doc.dump(2);
}

// The whole text plan for the thread alone: its sentence, first and once. Where the view is
// incomplete (not run as root) the one line that says so may follow.
void expect_text_told_once(const std::string& out, const std::string& tid, const std::string& pid) {
  const std::string first = thread_sentence(tid, pid) + "\n";
  ASSERT_EQ(out.substr(0, first.size()), first) << out;
  const std::string rest = out.substr(first.size());
  if (!rest.empty()) {
    EXPECT_EQ(rest.rfind("note: the view is incomplete", 0), 0u) << out;
    EXPECT_EQ(std::count(rest.begin(), rest.end(), '\n'), 1) << out;
  }
  EXPECT_EQ(out.find("nothing matched"), std::string::npos) << out;
  EXPECT_EQ(out.find("PID " + tid), std::string::npos) << out;
}

TEST(KillThread, AThreadIdIsToldAsItsProcessAndNothingIsPlanned) {
  ThreadedHolder h;
  ASSERT_NE(h.tid, h.process.pid());
  const std::string tid = std::to_string(h.tid), pid = std::to_string(h.process.pid());
  auto r = run_gpureap(kill_args(h.dev, {tid, "--yes"}));
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;  // kill: nothing matched
  expect_told_once(parse_output(r), h.tid, h.process.pid());
  EXPECT_EQ(r.err, "");

  // The text plan of a kill that asks nothing says the same, once.
  auto text =
      run_gpureap({"kill", tid, "--yes", "--dev-root", h.dev.path(), "--nvml-library", kNoNvml},
                  {"NO_COLOR=1", "COLUMNS=1000"});
  EXPECT_EQ(text.exit_code, 3) << text.out << text.err;
  expect_text_told_once(text.out, tid, pid);
  EXPECT_EQ(text.err, "");
  EXPECT_TRUE(no_signal_pending(h.process.pid()));
  EXPECT_TRUE(is_alive(h.process.pid()));
}

TEST(KillThread, DryRunSaysTheSameInTextAndJson) {
  ThreadedHolder h;
  const std::string tid = std::to_string(h.tid), pid = std::to_string(h.process.pid());
  auto json = run_gpureap(kill_args(h.dev, {tid, "--dry-run"}));
  EXPECT_EQ(json.exit_code, 3) << json.out << json.err;
  expect_told_once(parse_output(json), h.tid, h.process.pid());

  auto text =
      run_gpureap({"kill", tid, "--dry-run", "--dev-root", h.dev.path(), "--nvml-library", kNoNvml},
                  {"NO_COLOR=1", "COLUMNS=1000"});
  EXPECT_EQ(text.exit_code, 3) << text.out << text.err;
  expect_text_told_once(text.out, tid, pid);
  EXPECT_TRUE(no_signal_pending(h.process.pid()));
}

// Beside a number that is no process at all, that number is what matched nothing: the thread is
// still told first, and only once.
TEST(KillThread, BesideAnUnknownPidTheThreadIsToldFirstAndOnce) {
  ThreadedHolder h;
  const std::string tid = std::to_string(h.tid), pid = std::to_string(h.process.pid());
  // A number no process has: beyond pid_max.
  const std::string none = std::to_string(std::stol(read_text("/proc/sys/kernel/pid_max")) + 1);
  auto text = run_gpureap(
      {"kill", tid, none, "--dry-run", "--dev-root", h.dev.path(), "--nvml-library", kNoNvml},
      {"NO_COLOR=1", "COLUMNS=1000"});
  EXPECT_EQ(text.exit_code, 3) << text.out << text.err;
  const std::string first = thread_sentence(tid, pid) + "\n" + "PID " + none +
                            ": nothing matched.\n" + "note: PID " + none +
                            ": no such process, and no GPU driver lists it\n";
  EXPECT_EQ(text.out.substr(0, first.size()), first) << text.out;
  EXPECT_EQ(text.out.find("TID " + tid, 1), std::string::npos) << text.out;

  auto json = run_gpureap(kill_args(h.dev, {tid, none, "--dry-run"}));
  EXPECT_EQ(json.exit_code, 3) << json.out << json.err;
  auto doc = parse_output(json);
  EXPECT_EQ(doc["plan"]["selection"], "PID " + none) << doc.dump(2);
  EXPECT_EQ(
      doc["plan"]["notes"],
      nlohmann::json::array({thread_sentence(tid, pid),
                             "PID " + none + ": no such process, and no GPU driver lists it"}))
      << doc.dump(2);
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

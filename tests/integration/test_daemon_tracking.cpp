// The daemon's holder tracking through the kernel's events, on real processes and a stand-in
// dev root, with scan intervals of an hour: whatever the daemon sees, it saw through events. A
// late open by a long-running process, a holder's fork (and one made right after the open, by a
// trainer that exits at once), the final close of a shared open file (with the worker that held
// it last), an overflow of the kernel's queue; and the fallback to scans, said once in the log.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <set>
#include <thread>

#include "container_machine.h"
#include "support.h"

namespace gpureap::testing {
namespace {

using nlohmann::json;

// No driver: holders are device-file holders alone, which is what tracking is about.
std::vector<std::string> no_driver() {
  return {"GPUREAP_NVML_LIBRARY=" + kNoNvml};
}

class DaemonTracking : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "the kernel's events need root";
    std::ofstream(cfg_.file("config.toml"))
        << "interval = \"200ms\"\nholder_scan_interval = \"1h\"\nfull_scan_interval = \"1h\"\n"
           "event_full_scan_interval = \"1h\"\nlocal_socket = \""
        << socket() << "\"\n";
  }
  std::string socket() const { return cfg_.file("gpureap.sock"); }

  std::unique_ptr<DaemonProcess> daemon(const std::vector<std::string>& env = no_driver()) {
    auto d = std::make_unique<DaemonProcess>(
        std::vector<std::string>{"--config", cfg_.file("config.toml"), "--dev-root", dev_.path()},
        env);
    EXPECT_GT(d->port(), 0) << d->log();
    // Each scene starts once the daemon has taken its first sample: what a scene does while the
    // first full scan runs is not what these tests are about.
    EXPECT_TRUE(d->wait_log("first sample taken")) << d->log();
    return d;
  }

  static bool holds(const DaemonProcess& d, pid_t pid) {
    auto r = d.get("/api/v1/snapshot");
    if (r.status != 200) return false;
    auto row = row_of(json::parse(r.body, nullptr, false), pid);
    return !row.is_null() && row.value("holds_device", false);
  }

  TempDir cfg_;
  FakeDevRoot dev_;
};

TEST_F(DaemonTracking, ALateOpenByALongRunningProcessIsSeen) {
  Ready started, opened;
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  Child late([&] {
    started.signal();
    char c;
    if (::read(go[0], &c, 1) != 1) ::_exit(1);
    hold(dev_.dev("nvidia0"));
    opened.signal();
  });
  started.wait();
  auto d = daemon();
  ASSERT_TRUE(d->wait_log("holder tracking: events")) << d->log();
  EXPECT_FALSE(holds(*d, late.pid()));
  ASSERT_EQ(::write(go[1], "x", 1), 1);  // it opens the GPU file only now
  opened.wait();
  EXPECT_TRUE(wait_until([&] { return holds(*d, late.pid()); })) << d->log();
  EXPECT_GE(d->metric("gpureap_holder_opens_total ").value_or(0), 1);
  EXPECT_EQ(d->metric("gpureap_holder_tracking_mode{mode=\"events\"} "), 1);
  ::close(go[0]);
  ::close(go[1]);
}

TEST_F(DaemonTracking, AHoldersForkMakesItsChildAHolder) {
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  Ready forked;
  Child holder([&] {
    hold(dev_.dev("nvidia0"));
    char c;
    if (::read(go[0], &c, 1) != 1) ::_exit(1);
    pid_t child = ::fork();
    if (child == 0) {
      for (;;) ::pause();
    }
    forked.send(child);
  });
  auto d = daemon();
  ASSERT_TRUE(wait_until([&] { return holds(*d, holder.pid()); })) << d->log();
  ASSERT_EQ(::write(go[1], "x", 1), 1);
  pid_t child = static_cast<pid_t>(forked.receive());
  KillStrays strays{{child}};
  EXPECT_TRUE(wait_until([&] { return holds(*d, child); })) << d->log();
  EXPECT_GE(d->metric("gpureap_holder_forks_total ").value_or(0), 1);
  ::close(go[0]);
  ::close(go[1]);
}

// The case the daemon exists for, followed by events alone: a trainer opens its GPU, forks a
// worker and dies within milliseconds, and the worker keeps the memory. The kernel reports the
// open before the fd is in the trainer's table, so the collection it wakes may read the trainer
// holding nothing; repeated, since that happens on some runs only.
TEST_F(DaemonTracking, AGoneTrainersWorkerIsSeenThroughEventsAlone) {
  auto d = daemon();
  ASSERT_TRUE(d->wait_log("holder tracking: events")) << d->log();
  for (int round = 0; round < 10; ++round) {
    auto trainer = gone_trainer(dev_);
    // A bound, not a timing: a loaded runner has taken over 5 s to publish the next sample.
    ASSERT_TRUE(wait_until([&] { return holds(*d, trainer->worker); }, 30000))
        << "round " << round << ": worker " << trainer->worker << " of trainer " << trainer->trainer
        << "\n"
        << d->log();
  }
}

TEST_F(DaemonTracking, TheLastCloseOfASharedFileIsRecordedWithTheWorkerThatHeldIt) {
  // The trainer is gone and its worker keeps the file before the daemon starts: its scan finds
  // the worker, and the close is what this test follows (forks: AHoldersForkMakesItsChild...).
  auto trainer = gone_trainer(dev_);
  auto d = daemon();
  pid_t worker = trainer->worker;
  ASSERT_TRUE(wait_until([&] { return holds(*d, worker); })) << d->log();
  ::kill(worker, SIGKILL);
  ASSERT_TRUE(wait_gone(worker));
  json release;
  ASSERT_TRUE(wait_until([&] {
    auto doc = json::parse(d->get("/api/v1/releases").body, nullptr, false);
    if (!doc.contains("releases")) return false;
    for (const auto& r : doc["releases"])
      if (r["pid"] == worker && r["path"] == dev_.dev("nvidia0")) release = r;
    return !release.is_null();
  })) << d->get("/api/v1/releases").body;
  EXPECT_EQ(json::parse(d->get("/api/v1/releases").body)["tracking"], "events");
  // The history over the same span carries it too.
  auto history = json::parse(d->get("/api/v1/history?since=10m").body, nullptr, false);
  ASSERT_TRUE(history.contains("releases")) << history.dump();
  EXPECT_NE(history["releases"].dump().find("\"pid\":" + std::to_string(worker)), std::string::npos)
      << history["releases"].dump();
  EXPECT_FALSE(release["at"].get<std::string>().empty());
  EXPECT_TRUE(wait_until([&] { return !holds(*d, worker); }));
}

TEST_F(DaemonTracking, AKillIsDatedByTheKernelsFinalClose) {
  // The worker keeps the gone trainer's file before the daemon starts (its scan finds it): the
  // kill's final close is what this test follows.
  auto trainer = gone_trainer(dev_);
  auto d = daemon();
  ASSERT_TRUE(d->wait_log(kServingLocalSocket + socket())) << d->log();
  pid_t worker = trainer->worker;
  // A bound, not a timing: a loaded runner has taken over 5 s to publish the next sample.
  ASSERT_TRUE(wait_until([&] { return holds(*d, worker); }, 30000)) << d->log();
  auto r = run_gpureap(kill_args(dev_, {"--yes", "--grace", "2s", std::to_string(worker)}),
                       {"GPUREAP_DAEMON_SOCKET=" + socket()});
  auto doc = parse_output(r);
  ASSERT_EQ(doc["plan"]["targets"].size(), 1u) << r.out << r.err;  // the worker alone
  EXPECT_EQ(doc["plan"]["targets"][0]["pid"], worker);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  ASSERT_TRUE(doc["kernel_releases"].is_array()) << r.out;
  ASSERT_EQ(doc["kernel_releases"].size(), 1u) << doc.dump(1) << d->get("/api/v1/releases").body;
  EXPECT_EQ(doc["kernel_releases"][0]["pid"], worker);
  EXPECT_EQ(doc["kernel_releases"][0]["path"], dev_.dev("nvidia0"));
}

// The daemon's closes name PIDs of its own namespace: a kill with --no-daemon asks for none, and
// one from another PID namespace (a container's, that mounts the socket) takes none of them,
// though the daemon saw its target's file closed under the target's host PID.
TEST_F(DaemonTracking, AKillWithoutTheDaemonOrInAnotherPidNamespaceTakesNoneOfItsCloses) {
  auto d = daemon();
  ASSERT_TRUE(d->wait_log(kServingLocalSocket + socket())) << d->log();
  auto trainer = gone_trainer(dev_);
  const pid_t worker = trainer->worker;
  ASSERT_TRUE(wait_until([&] { return holds(*d, worker); })) << d->log();
  auto r = run_gpureap(
      kill_args(dev_, {"--yes", "--grace", "2s", "--no-daemon", std::to_string(worker)}),
      {"GPUREAP_DAEMON_SOCKET=" + socket()});
  auto doc = parse_output(r);
  EXPECT_EQ(doc["plan"]["targets"].size(), 1u) << r.out << r.err;
  EXPECT_TRUE(doc["kernel_releases"].is_null()) << r.out;

  // A holder and the kill in a new PID namespace: the shell's `$!` is the holder's number there.
  std::vector<std::string> argv{"/usr/bin/unshare",
                                "--pid",
                                "--fork",
                                "--mount-proc",
                                "/bin/sh",
                                "-c",
                                "sleep 600 3<\"$0\" & exec \"$@\" \"$!\"",
                                dev_.dev("nvidia0"),
                                GPUREAP_BINARY};
  for (auto& a : kill_args(dev_, {"--yes", "--grace", "2s"})) argv.push_back(a);
  r = run_program_in(argv, {"PATH=/usr/bin:/bin", "GPUREAP_DAEMON_SOCKET=" + socket()});
  if (r.err.rfind("unshare:", 0) == 0) GTEST_SKIP() << "no new PID namespace here: " << r.err;
  doc = parse_output(r);
  ASSERT_EQ(doc["plan"]["targets"].size(), 1u) << r.out << r.err;
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(doc["kernel_releases"].is_null()) << r.out << d->get("/api/v1/releases").body;
  // The daemon's document says whose PIDs its closes name.
  const json releases = json::parse(d->get("/api/v1/releases").body, nullptr, false);
  EXPECT_EQ(releases["pid_namespace"].is_number_unsigned(), true) << releases.dump();
}

TEST_F(DaemonTracking, ABurstOfOpensEndsWithTheRightHolders) {
  auto d = daemon();
  ASSERT_TRUE(d->wait_log("holder tracking: events")) << d->log();
  Ready done;
  // A burst of opens and closes while the daemon runs.
  Child burst([&] {
    for (int i = 0; i < 40000; ++i) {
      int fd = ::open(dev_.dev("nvidiactl").c_str(), O_RDONLY);
      if (fd >= 0) ::close(fd);
    }
    hold(dev_.dev("nvidia0"));
    done.signal();
  });
  done.wait(60000);
  // Whether the queue overflowed (a full scan) or the kernel merged the burst (one event per
  // process and file), the holder set is right afterwards.
  EXPECT_TRUE(wait_until([&] { return holds(*d, burst.pid()); })) << d->log();
  EXPECT_GE(d->metric("gpureap_holder_opens_total ").value_or(0), 1);
}

// An unprivileged user's open/close storm on a GPU file wakes the daemon again and again: the
// live view still sees a holder opened during the storm (how soon is bench/holder_storm.sh's to
// measure, not a test's), and the history keeps one point per interval, so it still spans its
// whole window afterwards.
TEST_F(DaemonTracking, AnOpenStormNeitherErasesTheHistoryNorHidesANewHolder) {
  REQUIRE_DOUBLE();
  const json scenario = {{"gpus",
                          {{{"name", "NVIDIA H200"},
                            {"uuid", "GPU-0000"},
                            {"minor", 0},
                            {"total_bytes", 80 * GiB},
                            {"processes", json::array()}}}}};
  ASSERT_EQ(::chmod(dev_.path().c_str(), 0755), 0);  // as /dev: others reach its files
  if (!ContainerMachine::user_reaches(65534, dev_.path()))
    GTEST_SKIP() << "uid 65534 cannot reach " << dev_.path()
                 << " (a folder above it only root may enter, as a chroot's root made by "
                    "mktemp -d): it cannot storm the device files";
  FakeNvml nvml(scenario);
  std::ofstream(cfg_.file("config.toml"))
      << "interval = \"200ms\"\nhistory = \"2s\"\nholder_scan_interval = \"1h\"\n"
         "full_scan_interval = \"1h\"\nevent_full_scan_interval = \"1h\"\nlocal_socket = \"\"\n";
  DaemonProcess d({"--config", cfg_.file("config.toml"), "--dev-root", dev_.path()}, nvml.env());
  ASSERT_TRUE(d.wait_log("holder tracking: events")) << d.log();
  int stop[2];
  ASSERT_EQ(::pipe(stop), 0);
  Child storm([&] {
    ::close(stop[1]);
    if (::setresuid(65534, 65534, 65534) != 0) ::_exit(2);  // anyone may open /dev/nvidia*
    ::fcntl(stop[0], F_SETFL, O_NONBLOCK);
    char c;
    while (::read(stop[0], &c, 1) < 0)
      for (int i = 0; i < 50; ++i) ::close(::open(dev_.dev("nvidia0").c_str(), O_RDONLY));
  });
  ::close(stop[0]);
  // A storm once the daemon has counted 50 opens: a loaded machine opens fewer a second, so the
  // test waits for the count, not for a time.
  ASSERT_TRUE(
      wait_until([&] { return d.metric("gpureap_holder_opens_total ").value_or(0) >= 50; }, 60000))
      << "not much of a storm: " << d.metric("gpureap_holder_opens_total ").value_or(0);
  Ready opened;
  Child late([&] {
    hold(dev_.dev("nvidia0"));
    opened.signal();
  });
  opened.wait();
  // Scans are an hour apart: its open event (or the scan that lost events ask for) shows it.
  EXPECT_TRUE(wait_until([&] { return holds(d, late.pid()); }, 60000)) << "not seen in the storm";
  // The storm goes on until the history spans most of its 2 s window: a loaded machine samples
  // late, so the test waits for the span, not for a time. A storm that pushed the history's past
  // out would keep it short until the deadline.
  json doc;
  const auto span = [&] {
    doc = json::parse(d.get("/api/v1/history?since=1h").body, nullptr, false);
    if (!doc.contains("gpus") || doc["gpus"].empty()) return 0.0;
    const auto& samples = doc["gpus"][0]["samples"];
    if (samples.size() < 2) return 0.0;
    return samples.back()["time"].get<double>() - samples.front()["time"].get<double>();
  };
  const bool spanned = wait_until([&] { return span() >= 1.5; }, 30000);
  ASSERT_EQ(::write(stop[1], "x", 1), 1);
  ::close(stop[1]);

  ASSERT_TRUE(doc.contains("gpus") && !doc["gpus"].empty()) << doc.dump();
  const auto& points = doc["gpus"][0]["samples"];
  // 2 s at 200 ms: at most the window's slots and one cut by its start.
  EXPECT_LE(points.size(), 12u) << points.dump();
  ASSERT_GE(points.size(), 2u) << doc.dump().substr(0, 3000) << d.log();
  EXPECT_TRUE(spanned) << "the storm pushed the history's past out: " << points.dump();
  std::set<long long> slots;
  for (const auto& p : points) slots.insert(std::llround(p["time"].get<double>() * 1000) / 200);
  EXPECT_EQ(slots.size(), points.size()) << "two points in one interval: " << points.dump();
}

TEST_F(DaemonTracking, AWorkerWhoseParentExitedInAGroupThatLivesOnIsAnOrphanToTheDaemon) {
  // An entrypoint (a subreaper leading its session, as a container's init leads its namespace)
  // runs a trainer in its own group; the trainer opens the GPU file, forks a worker and exits.
  // /proc then shows the worker as one of the entrypoint's children, in its live group: only
  // the daemon, which saw the fork and the exit, knows that the worker's parent died.
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  Ready opened, forked;
  Child entrypoint([&] {
    ::setsid();
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    pid_t trainer = ::fork();
    if (trainer == 0) {
      hold(dev_.dev("nvidia0"));
      opened.send(::getpid());
      char c;
      if (::read(go[0], &c, 1) != 1) ::_exit(1);
      if (::fork() == 0) {
        forked.send(::getpid());
        for (;;) ::pause();
      }
      ::_exit(0);
    }
    ::waitpid(trainer, nullptr, 0);
  });
  const pid_t trainer = static_cast<pid_t>(opened.receive());
  REQUIRE_DOUBLE();
  // The driver lists the trainer's context, which outlives it: the evidence its job is gone.
  FakeNvml nvml(
      json{{"gpus",
            {{{"uuid", "GPU-0000"},
              {"minor", 0},
              {"processes", {{{"pid", trainer}, {"used_bytes", GiB}, {"leaked", true}}}}}}}});
  auto d = daemon(nvml.env());
  ASSERT_TRUE(d->wait_log("holder tracking: events")) << d->log();
  if (d->log().find("forks through the proc connector") == std::string::npos)
    GTEST_SKIP() << "the daemon cannot follow forks here: " << d->log();
  ASSERT_TRUE(wait_until([&] { return holds(*d, trainer); })) << d->log();
  ASSERT_EQ(::write(go[1], "x", 1), 1);
  const pid_t worker = static_cast<pid_t>(forked.receive());
  KillStrays strays{{worker}};
  ASSERT_TRUE(wait_gone(trainer));
  ASSERT_EQ(parent_of(worker), entrypoint.pid());
  ::close(go[0]);
  ::close(go[1]);

  auto own = run_json({"ps", "--json", "--dev-root", dev_.path()}, nvml.env());
  auto row = row_of(own, worker);
  ASSERT_FALSE(row.is_null()) << own.dump(2);
  EXPECT_EQ(row["anomalies"], json::array()) << "/proc has no evidence: " << row.dump(2);
  EXPECT_TRUE(wait_until([&] {
    auto doc = json::parse(d->get("/api/v1/snapshot").body, nullptr, false);
    return row_of(doc, worker)["anomalies"] == json::array({"orphan", "inherited-holder"});
  })) << d->get("/api/v1/snapshot").body;
  // A client reads the daemon's snapshot over the local socket, with the evidence.
  auto served = run_gpureap({"doctor", "--json", "--settle", "0s", "--only", "orphan-holder"},
                            {"GPUREAP_DAEMON_SOCKET=" + socket()});
  EXPECT_NE(served.out.find("the process that forked it (" + std::to_string(trainer) +
                            ") has exited (the daemon saw both)"),
            std::string::npos)
      << served.out << served.err;
}

// The same entrypoint, but the trainer forks its worker right after its open and exits at once,
// as a short job does: the daemon reads the fork before it knows the trainer holds (the open is
// read later, or the scan it wakes finds the trainer gone), and must still tie the worker to the
// gone trainer. Only the fork says so: the worker's parent is the entrypoint and its group the
// entrypoint's, which lives on. Without it, the trainer's context reads as leaked and its worker
// as an unrelated holder.
TEST_F(DaemonTracking, AWorkerForkedRightAfterTheOpenKeepsItsGoneTrainersContext) {
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  Ready started, forked;
  Child entrypoint([&] {
    ::setsid();
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    pid_t trainer = ::fork();
    if (trainer == 0) {
      started.send(::getpid());
      char c;
      if (::read(go[0], &c, 1) != 1) ::_exit(1);
      hold(dev_.dev("nvidia0"));
      if (::fork() == 0) {
        forked.send(::getpid());
        for (;;) ::pause();
      }
      ::_exit(0);
    }
    ::waitpid(trainer, nullptr, 0);  // then sleeps: its group and session live on
  });
  const pid_t trainer = static_cast<pid_t>(started.receive());
  REQUIRE_DOUBLE();
  // The driver lists the trainer's context, which outlives it.
  FakeNvml nvml(
      json{{"gpus",
            {{{"uuid", "GPU-0000"},
              {"minor", 0},
              {"processes", {{{"pid", trainer}, {"used_bytes", GiB}, {"leaked", true}}}}}}}});
  auto d = daemon(nvml.env());
  ASSERT_TRUE(d->wait_log("holder tracking: events")) << d->log();
  if (d->log().find("forks through the proc connector") == std::string::npos)
    GTEST_SKIP() << "the daemon cannot follow forks here: " << d->log();
  ASSERT_EQ(::write(go[1], "x", 1), 1);  // it opens, forks and exits only now
  const pid_t worker = static_cast<pid_t>(forked.receive());
  KillStrays strays{{worker}};
  ASSERT_TRUE(wait_gone(trainer));
  ASSERT_EQ(parent_of(worker), entrypoint.pid());
  ::close(go[0]);
  ::close(go[1]);

  // A bound, not a timing: a loaded runner has taken over 5 s to publish the next sample. A
  // missed fork never ties them: the worker holds unseen (no open of its own) and the context
  // reads as leaked.
  json gone, kept;
  wait_until(
      [&] {
        auto doc = json::parse(d->get("/api/v1/snapshot").body, nullptr, false);
        gone = row_of(doc, trainer);
        kept = row_of(doc, worker);
        return gone.is_object() && gone["ghost"].is_object() && !gone["ghost"]["keepers"].empty() &&
               kept.is_object() && !kept["keeps"].empty();
      },
      30000);
  ASSERT_TRUE(gone.is_object() && gone["ghost"].is_object())
      << "no row of the gone trainer " << trainer << ": " << gone.dump(2) << d->log();
  ASSERT_TRUE(kept.is_object()) << "the worker " << worker << " is not seen holding; the trainer "
                                << trainer << ": " << gone.dump(2) << d->log();
  EXPECT_EQ(gone["in_proc"], false) << gone.dump(2);
  EXPECT_EQ(gone["listed_by_driver"], true) << gone.dump(2);
  const json& ghost = gone["ghost"];
  EXPECT_EQ(ghost["keepers"], json::array({worker})) << gone.dump(2) << d->log();
  EXPECT_EQ(ghost["leaked"], false) << gone.dump(2);
  EXPECT_EQ(ghost["other_holders"], json::array()) << gone.dump(2);
  EXPECT_EQ(ghost["listed_keepers"], json::array()) << gone.dump(2);
  EXPECT_EQ(kept["keeps"], json::array({trainer})) << kept.dump(2);
  EXPECT_EQ(kept["shares_context_of"], json::array()) << kept.dump(2);
  // The worker alone keeps anything (not the entrypoint, its parent now).
  const json doc = json::parse(d->get("/api/v1/snapshot").body, nullptr, false);
  ASSERT_TRUE(doc.contains("processes")) << doc.dump();
  for (const auto& r : doc["processes"]) {
    if (r["pid"] != worker) {
      EXPECT_EQ(r["keeps"], json::array()) << r.dump(2);
    }
  }
}

TEST_F(DaemonTracking, WithHolderEventsOffItScansAndSaysSo) {
  std::ofstream(cfg_.file("config.toml"), std::ios::app) << "holder_events = false\n";
  auto d = daemon();
  EXPECT_TRUE(d->wait_log("holder tracking: scans (holder_events = false)")) << d->log();
  EXPECT_EQ(d->metric("gpureap_holder_tracking_mode{mode=\"scans\"} "), 1);
  EXPECT_EQ(json::parse(d->get("/api/v1/releases").body)["tracking"], "scans");
}

}  // namespace
}  // namespace gpureap::testing

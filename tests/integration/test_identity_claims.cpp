// Identity on the kernel's word, with real processes: a listed PID whose number another user's
// process has now, and a gone trainer's context beside another user's monitor. Each plan is
// asserted whole: the newcomer and the monitor are never planned, named or charged.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "daemon_modes.h"
#include "support.h"

namespace gpureap::testing {
namespace {

using nlohmann::json;

constexpr uid_t kNobody = 65534;

// Another user's process that blocks every signal: a signal sent to it stays pending.
void stranger_body(const char* name) {
  ::prctl(PR_SET_NAME, name);
  if (::setgid(kNobody) != 0 || ::setuid(kNobody) != 0) ::_exit(1);
  block_all_signals();
  for (;;) ::pause();
}

json listing(pid_t pid, uint64_t bytes, std::vector<pid_t> holders) {
  return {{"pid", pid}, {"used_bytes", bytes}, {"holders", holders}};
}

json one_gpu(std::vector<json> processes) {
  // json::array, not braces: compilers disagree on whether {{...}} is a one-element array.
  json gpu = {{"name", "NVIDIA H200"},
              {"uuid", "GPU-0000"},
              {"minor", 0},
              {"total_bytes", 80 * GiB},
              {"processes", json(std::move(processes))}};
  return {{"gpus", json::array({std::move(gpu)})}};
}

std::vector<pid_t> plan_of(const FakeDevRoot& dev, const FakeNvml& nvml,
                           std::vector<std::string> extra) {
  std::vector<std::string> args{"kill", "--json", "--dry-run", "--dev-root", dev.path()};
  args.insert(args.end(), extra.begin(), extra.end());
  return planned_pids(parse_output(run_gpureap(args, nvml.env())));
}

json doctor_of(const FakeDevRoot& dev, const FakeNvml& nvml) {
  return parse_output(
      run_gpureap({"doctor", "--json", "--settle", "100ms", "--dev-root", dev.path()}, nvml.env()));
}

// The finding of a gpureap.doctor/v1 document that names `pid`, or null.
json finding_naming(const json& doc, pid_t pid) {
  for (const auto& f : doc["findings"])
    for (const auto& p : f["pids"])
      if (p == pid) return f;
  return nullptr;
}

// A trainer that leads no group (a script started it) opens GPU 0's file, forks a worker that
// inherits it, and dies, reaped: its number is free, and nothing on the kernel's word ties the
// worker to it in one scan.
struct LooseTrainer {
  pid_t trainer = 0, worker = 0;
  KillStrays strays;
  explicit LooseTrainer(const FakeDevRoot& dev) {
    Ready ready;
    Child t([&] {
      hold(dev.dev("nvidia0"));
      if (::fork() == 0) {
        ::prctl(PR_SET_NAME, "loader-worker");
        ready.send(::getpid());
        for (;;) ::pause();
      }
      ::_exit(0);
    });
    trainer = t.pid();
    worker = static_cast<pid_t>(ready.receive());
    strays.pids = {worker};
    t.kill_and_reap();
  }
};

TEST(IdentityClaims, AListedPidReusedByAnotherUsersProcessIsNeverChargedOrPlanned) {
  REQUIRE_DOUBLE();
  if (::geteuid() != 0) GTEST_SKIP() << "needs root for ns_last_pid and another uid";
  FakeDevRoot dev;
  LooseTrainer job(dev);
  // Another user's database is handed the dead trainer's number.
  pid_t newcomer = fork_at(job.trainer, [] { stranger_body("database"); });
  if (newcomer < 0) GTEST_SKIP() << "the kernel did not hand out PID " << job.trainer << " again";
  KillStrays strays{{newcomer}};
  ASSERT_TRUE(wait_until([&] {
    return proc_status_field(newcomer, "Uid").find(std::to_string(kNobody)) != std::string::npos;
  }));
  FakeNvml nvml(one_gpu({listing(job.trainer, 8 * GiB, {job.trainer, job.worker})}));

  auto ps = run_json({"ps", "--json", "--dev-root", dev.path()}, nvml.env());
  auto row = row_of(ps, job.trainer);
  ASSERT_FALSE(row.is_null()) << ps.dump(2);
  EXPECT_EQ(row["in_proc"], false);
  EXPECT_EQ(row["comm"], nullptr) << "the newcomer is not the listed process";
  ASSERT_TRUE(row["reused_by"].is_object()) << row.dump(2);
  EXPECT_EQ(row["reused_by"]["comm"], "database");
  EXPECT_EQ(row["reused_by"]["uid"], kNobody);
  EXPECT_EQ(row["reused_by"]["why"], "holds-no-file");
  EXPECT_EQ(anomalies(row), (std::vector<std::string>{"no-such-process", "leaked"}));
  EXPECT_EQ(row["ghost"]["keepers"], json::array());
  EXPECT_EQ(row["ghost"]["other_holders"], json::array({job.worker}));
  auto text = run_gpureap({"ps", "--no-color", "--dev-root", dev.path()}, nvml.env());
  EXPECT_NE(text.out.find("(PID reused; now database)"), std::string::npos) << text.out;

  // No selector reaches the newcomer; the worker, not known to keep the memory, only as a
  // holder of GPU 0's file when the whole GPU is asked for.
  EXPECT_EQ(plan_of(dev, nvml, {"--ghosts"}), std::vector<pid_t>{});
  EXPECT_EQ(plan_of(dev, nvml, {std::to_string(job.trainer)}), std::vector<pid_t>{});
  EXPECT_EQ(plan_of(dev, nvml, {"--gpu", "0"}), std::vector<pid_t>{job.worker});
  EXPECT_EQ(plan_of(dev, nvml, {"--gpu", "0", "--user", std::to_string(kNobody)}),
            std::vector<pid_t>{});

  // Doctor says the number was reused, and charges the newcomer with nothing.
  auto doc = doctor_of(dev, nvml);
  auto f = finding_naming(doc, job.trainer);
  ASSERT_FALSE(f.is_null()) << doc.dump(2);
  EXPECT_NE(f["evidence"].dump().find("was reused"), std::string::npos) << f.dump(2);
  EXPECT_TRUE(finding_naming(doc, newcomer).is_null() || newcomer == job.trainer);
  auto fix = run_gpureap(
      {"doctor", "--fix", "--json", "--settle", "100ms", "--dev-root", dev.path()}, nvml.env());
  EXPECT_NE(fix.err.find("Nothing for --fix to do"), std::string::npos) << fix.err;

  EXPECT_TRUE(is_alive(newcomer));
  EXPECT_TRUE(no_signal_pending(newcomer));
}

TEST(IdentityClaims, AnotherUsersMonitorIsNeverAGoneTrainersKeeper) {
  // Beside a loose trainer's worker, another user's NVML monitor holds GPU 0's file. Neither is
  // a proven keeper: both are other holders, the memory is a leak, nothing is planned.
  REQUIRE_DOUBLE();
  if (::geteuid() != 0) GTEST_SKIP() << "needs root for another uid";
  FakeDevRoot dev;
  LooseTrainer job(dev);
  Child monitor([&] {
    ::setsid();
    hold(dev.dev("nvidia0"));
    stranger_body("nvml-monitor");
  });
  ASSERT_TRUE(wait_until([&] {
    return proc_status_field(monitor.pid(), "Uid").find(std::to_string(kNobody)) !=
           std::string::npos;
  }));
  FakeNvml nvml(one_gpu({listing(job.trainer, 8 * GiB, {job.trainer, job.worker})}));

  auto ps = run_json({"ps", "--json", "--dev-root", dev.path()}, nvml.env());
  auto row = row_of(ps, job.trainer);
  ASSERT_FALSE(row.is_null()) << ps.dump(2);
  EXPECT_EQ(row["ghost"]["keepers"], json::array());
  EXPECT_EQ(sorted(pids(row["ghost"]["other_holders"])), sorted({job.worker, monitor.pid()}));
  for (pid_t holder : {job.worker, monitor.pid()})
    EXPECT_TRUE(anomalies(row_of(ps, holder)).empty()) << row_of(ps, holder).dump(2);

  EXPECT_EQ(plan_of(dev, nvml, {"--ghosts"}), std::vector<pid_t>{});
  EXPECT_EQ(plan_of(dev, nvml, {std::to_string(job.trainer)}), std::vector<pid_t>{});
  for (const char* gpu : {"", "0"}) {
    std::vector<std::string> args{"doctor", "--fix",      "--json",  "--settle",
                                  "100ms",  "--dev-root", dev.path()};
    if (*gpu) args.insert(args.end(), {"--gpu", gpu});
    auto fix = run_gpureap(args, nvml.env());
    EXPECT_NE(fix.err.find("Nothing for --fix to do"), std::string::npos) << fix.err;
  }

  auto doc = doctor_of(dev, nvml);
  const std::string said = doc.dump();
  EXPECT_NE(said.find("not known to keep PID " + std::to_string(job.trainer)), std::string::npos)
      << said;
  EXPECT_TRUE(is_alive(monitor.pid()));
  EXPECT_TRUE(no_signal_pending(monitor.pid()));
}

// A copy of sleep(1) named `name` in `dir`, owned by `uid` as a file in a user's home is.
std::string program_named(const TempDir& dir, const std::string& name, uid_t uid) {
  std::string program = dir.file(name);
  std::filesystem::copy_file("/bin/sleep", program);
  ::chmod(program.c_str(), 0755);
  EXPECT_EQ(::chown(program.c_str(), uid, uid), 0);
  return program;
}

TEST(IdentityClaims, CopiesOfTheMpsProgramsInAUsersHomeAreNoServer) {
  // The control daemon and its server under their real names, but copies in a directory a user
  // owns: the "server" is an ordinary job, and a gone client listed beside it is no client of it.
  REQUIRE_DOUBLE();
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give the copies to another user";
  FakeDevRoot dev;
  TempDir home;
  ASSERT_EQ(::chown(home.path().c_str(), kNobody, kNobody), 0);
  ::chmod(home.path().c_str(), 0755);
  const std::string control_program = program_named(home, "nvidia-cuda-mps-control", kNobody);
  const std::string server_program = program_named(home, "nvidia-cuda-mps-server", kNobody);
  Ready ready;
  Child control([&] {
    ::setsid();
    pid_t s = ::fork();
    if (s == 0) {
      hold(dev.dev("nvidia0"));
      ::execl(server_program.c_str(), "nvidia-cuda-mps-server", "infinity", nullptr);
      ::_exit(97);
    }
    ready.send(s);
    ::execl(control_program.c_str(), "nvidia-cuda-mps-control", "infinity", nullptr);
    ::_exit(97);
  });
  const pid_t server = static_cast<pid_t>(ready.receive());
  KillStrays strays{{server}};
  auto runs = [](pid_t pid, const std::string& program) {
    std::error_code ec;
    auto exe = std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec);
    return !ec && exe.string() == program;
  };
  ASSERT_TRUE(wait_until(
      [&] { return runs(server, server_program) && runs(control.pid(), control_program); }));
  const pid_t client = dead_pid();
  FakeNvml nvml(one_gpu(
      {{{"pid", server}, {"used_bytes", GiB}},
       {{"pid", client}, {"used_bytes", 4 * GiB}, {"kind", "mps"}, {"holders", {server}}}}));
  auto ps = run_json({"ps", "--json", "--dev-root", dev.path()}, nvml.env());
  auto s = row_of(ps, server);
  ASSERT_FALSE(s.is_null()) << ps.dump(2);
  EXPECT_TRUE(s["gpus"][0]["serves_clients"].is_null()) << s.dump(2);
  auto g = row_of(ps, client);
  ASSERT_FALSE(g.is_null()) << ps.dump(2);
  EXPECT_TRUE(g["ghost"]["servers"].empty()) << g.dump(2);
  EXPECT_TRUE(g["gpus"][0]["server"].is_null());
}

TEST(IdentityClaims, AKeeperThatExecsAProtectedProgramStaysItsKeeper) {
  // A gone trainer's worker (its group: kin on the kernel's word) then runs a system-installed
  // protected program. It keeps the dead job's memory whatever it runs now: --ghosts plans it.
  REQUIRE_DOUBLE();
  if (::geteuid() != 0) GTEST_SKIP() << "a system-installed program needs root";
  FakeDevRoot dev;
  TempDir bin;
  ::chmod(bin.path().c_str(), 0755);
  const std::string program = bin.file("nvidia-persistenced");
  std::filesystem::copy_file("/bin/sleep", program);
  ::chmod(program.c_str(), 0755);
  Ready ready;
  Child trainer([&] {
    ::setpgid(0, 0);
    hold(dev.dev("nvidia0"));
    if (::fork() == 0) {
      ready.send(::getpid());
      ::execl(program.c_str(), "nvidia-persistenced", "infinity", nullptr);
      ::_exit(97);
    }
    ::_exit(0);
  });
  const pid_t gone = trainer.pid();
  const pid_t keeper = static_cast<pid_t>(ready.receive());
  KillStrays strays{{keeper}};
  trainer.kill_and_reap();
  ASSERT_TRUE(wait_until([&] {
    std::error_code ec;
    return std::filesystem::read_symlink("/proc/" + std::to_string(keeper) + "/exe", ec).string() ==
           program;
  }));
  // A real persistence daemon beside it, which keeps nothing, stays protected and alone.
  auto daemon = run_system_program(dev, "nvidia0", "nvidia-persistenced");
  FakeNvml nvml(one_gpu({listing(gone, 8 * GiB, {gone, keeper})}));
  EXPECT_EQ(plan_of(dev, nvml, {"--ghosts"}), std::vector<pid_t>{keeper});
  auto doc = doctor_of(dev, nvml);
  const json* f = finding(doc, "no-such-process");
  ASSERT_NE(f, nullptr) << doc.dump(2);
  EXPECT_EQ(sorted(pids((*f)["pids"])), sorted({gone, keeper}));
  // Asked for the whole GPU, the protected daemon that keeps nothing is refused; the keeper
  // is not.
  auto gpu0 = parse_output(run_gpureap(
      {"kill", "--json", "--dry-run", "--gpu", "0", "--dev-root", dev.path()}, nvml.env()));
  EXPECT_EQ(planned_pids(gpu0), sorted({keeper, daemon->pid()}));
  for (const auto& t : gpu0["plan"]["targets"])
    EXPECT_EQ(t["action"], t["pid"] == keeper ? "signal" : "refused") << t.dump(2);
}

json daemon_row(const DaemonProcess& d, pid_t pid) {
  return row_of(snapshot_of(d), pid);
}

bool daemon_sees_holding(const DaemonProcess& d, pid_t pid) {
  auto row = daemon_row(d, pid);
  return row.is_object() && row.value("holds_device", false);
}

// A trainer leads its group and holds GPU 0's file; its worker leaves the group (setsid), so
// once the trainer dies its number is free. Another user takes the number, makes a session of
// it, and leaves a child there that opens GPU 0's file itself. A daemon (in `mode`; the scans
// one reads /proc at every sample) saw the trainer fork the worker and end: the worker is the
// keeper, the newcomer's child only another holder, in doctor's finding as in the snapshot.
void reused_group_number_scene(Mode mode) {
  FakeDevRoot dev;
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  Ready started, forked;
  Child trainer([&] {
    ::setpgid(0, 0);
    hold(dev.dev("nvidia0"));
    started.signal();
    char c;
    if (::read(go[0], &c, 1) != 1) ::_exit(1);
    if (::fork() == 0) {
      ::setsid();
      ::prctl(PR_SET_NAME, "loader-worker");
      forked.send(::getpid());
      for (;;) ::pause();
    }
    if (::read(go[0], &c, 1) != 1) ::_exit(1);
    ::_exit(0);
  });
  started.wait();
  const pid_t gone = trainer.pid();
  FakeNvml nvml(one_gpu({{{"pid", gone}, {"used_bytes", 8 * GiB}, {"leaked", true}}}));
  TempDir dir;
  auto d = mode_daemon(mode, dir, dev, nvml, "", Rescan::EverySample);
  ASSERT_TRUE(wait_until([&] { return daemon_sees_holding(*d, gone); })) << d->log();
  ASSERT_EQ(::write(go[1], "x", 1), 1);
  const pid_t worker = static_cast<pid_t>(forked.receive());
  KillStrays strays{{worker}};
  ASSERT_TRUE(wait_until([&] { return daemon_sees_holding(*d, worker); })) << d->log();
  ASSERT_EQ(::write(go[1], "x", 1), 1);  // the trainer ends once the daemon knows its worker
  trainer.kill_and_reap();
  ASSERT_TRUE(wait_until([&] {
    auto row = daemon_row(*d, gone);
    return row.is_object() && row.value("in_proc", true) == false;
  }));

  Ready newcomer_child;
  pid_t middle = fork_at(gone, [&] {
    ::setsid();
    if (::fork() == 0) {
      ::prctl(PR_SET_NAME, "nvml-monitor");
      hold(dev.dev("nvidia0"));  // before it is nobody: the test's dev root is root's alone
      if (::setgid(kNobody) != 0 || ::setuid(kNobody) != 0) ::_exit(1);
      newcomer_child.send(::getpid());
      for (;;) ::pause();
    }
    ::_exit(0);
  });
  if (middle < 0) GTEST_SKIP() << "the kernel did not hand out PID " << gone << " again";
  const pid_t stranger = static_cast<pid_t>(newcomer_child.receive());
  strays.pids.push_back(stranger);
  ::waitpid(middle, nullptr, 0);
  ASSERT_TRUE(wait_until([&] {
    auto row = daemon_row(*d, stranger);
    return !row.is_null() && row["pgid"] == gone && row.value("holds_device", false);
  })) << d->log();

  auto row = daemon_row(*d, gone);
  EXPECT_EQ(row["ghost"]["keepers"], json::array({worker})) << row.dump(2);
  EXPECT_EQ(row["ghost"]["other_holders"], json::array({stranger})) << row.dump(2);
  auto served = run_gpureap({"doctor", "--json", "--settle", "0s"}, client_of(dir));
  auto doc = parse_output(served);
  EXPECT_EQ(doc["source"]["kind"], "daemon") << served.err;
  auto f = finding_naming(doc, gone);
  ASSERT_FALSE(f.is_null()) << doc.dump(2);
  EXPECT_EQ(sorted(pids(f["pids"])), sorted({gone, worker}));
  EXPECT_TRUE(finding_naming(doc, stranger).is_null()) << doc.dump(2);
  for (int fd : go) ::close(fd);
}

TEST(IdentityClaims, ThroughTheDaemonAReusedGroupNumberMakesNoKeeper) {
  REQUIRE_DOUBLE();
  if (::geteuid() != 0) GTEST_SKIP() << "needs root for the daemon's events and ns_last_pid";
  for (Mode m : {Mode::Events, Mode::Scans}) {
    SCOPED_TRACE(name_of(m));
    reused_group_number_scene(m);
    if (::testing::Test::IsSkipped() || ::testing::Test::HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace gpureap::testing

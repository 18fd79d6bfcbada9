// deploy/slurm/epilog.sh and prolog.sh, run as slurmd runs them (the job's variables in a bare
// environment), against real processes, stand-in device files and the NVML test double.
#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <utility>

#include "support.h"

extern char** environ;

namespace gpureap::testing {
namespace {

using nlohmann::json;

const std::string kSlurmDir = GPUREAP_SLURM_DIR;
const std::string kEpilog = kSlurmDir + "/epilog.sh";
const std::string kProlog = kSlurmDir + "/prolog.sh";
const std::string kLibrary = kSlurmDir + "/gpureap-slurm.sh";
const std::string kUuid1 = "GPU-11111111-2222-3333-4444-555555555555";

// The job's user: ours, or nobody when we are root (so that the tests' own root processes are
// not the job's).
uid_t job_uid() {
  return ::geteuid() == 0 ? 65534 : ::geteuid();
}

// In a child body: become the job's user (nothing to do unless we are root). Files opened
// before stay open, as a job's do.
void become_job_user() {
  if (::geteuid() != 0) return;
  if (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(99);
}

// A uid that is not ours.
uid_t other_uid() {
  return ::geteuid() == 65534 ? 65533 : 65534;
}

// Where a program is on PATH, or "".
std::string which(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    std::string candidate = dir + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

// Runs argv (argv[0] looked up on PATH) in a bare environment: PATH, TMPDIR and `env` only, as
// slurmd gives prologs and epilogs little more than the job's variables. A PATH in `env` wins.
RunResult run_program(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  std::vector<std::string> env_s = env;
  for (const std::string keep : {"PATH", "TMPDIR"}) {
    bool given = std::any_of(env.begin(), env.end(),
                             [&](const std::string& e) { return e.rfind(keep + "=", 0) == 0; });
    if (const char* v = std::getenv(keep.c_str()); v && !given) env_s.push_back(keep + "=" + v);
  }
  return run_program_in(argv, env_s);
}

size_t lines(const std::string& text) {
  return std::count(text.begin(), text.end(), '\n');
}

// Two GPUs behind the stand-ins /dev/nvidia0 and /dev/nvidia1.
json slurm_scenario(json gpu0_processes, json gpu1_processes, uint64_t gpu1_driver_held = 0) {
  return {{"gpus",
           {{{"uuid", "GPU-00000000-0000-0000-0000-000000000000"},
             {"minor", 0},
             {"total_bytes", 80 * GiB},
             {"processes", gpu0_processes}},
            {{"uuid", kUuid1},
             {"minor", 1},
             {"total_bytes", 80 * GiB},
             {"driver_held_bytes", gpu1_driver_held},
             {"processes", gpu1_processes}}}}};
}

// A job's leftover holding `device` as the job's user, under a parent that reaps it once it
// ends (as its own parent or init would): the driver's PID then names a gone process.
class Leftover {
 public:
  explicit Leftover(const std::string& device)
      : parent_([this, device] {
          pid_t pid = ::fork();
          if (pid == 0) {
            hold(device);
            become_job_user();
            ready_.send(::getpid());
            for (;;) ::pause();
          }
          while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
          }
        }),
        pid_(static_cast<pid_t>(ready_.receive())),
        strays_{{pid_}} {}
  pid_t pid() const { return pid_; }

 private:
  Ready ready_;
  Child parent_;
  pid_t pid_;
  KillStrays strays_;
};

class SlurmScript : public ::testing::Test {
 protected:
  void SetUp() override { REQUIRE_DOUBLE(); }

  // The script as slurmd would run it (its #! line), or under `shell` when one is given.
  RunResult run(const std::string& script, std::vector<std::string> vars,
                const std::string& shell = "") {
    std::vector<std::string> env{"SLURM_JOB_ID=123",
                                 std::string("GPUREAP=") + GPUREAP_BINARY,
                                 "GPUREAP_OPTS=--dev-root " + dev_.path(),
                                 "GPUREAP_SYSLOG=0",
                                 "GPUREAP_SLURM_DEFAULTS=/nonexistent",
                                 "GPUREAP_WAIT_RELEASE=1s",
                                 "GPUREAP_SETTLE=300ms",
                                 "GPUREAP_PROLOG_SETTLE=300ms"};
    for (const auto& e : nvml_.env()) env.push_back(e);
    // Later entries override: a test's own settings win.
    for (const auto& v : vars) {
      std::string name = v.substr(0, v.find('=') + 1);
      std::erase_if(env, [&](const std::string& e) { return e.rfind(name, 0) == 0; });
      env.push_back(v);
    }
    std::vector<std::string> argv{script};
    if (!shell.empty()) argv.insert(argv.begin(), shell);
    return run_program(argv, env);
  }

  std::string uid_var(uid_t uid) const { return "SLURM_JOB_UID=" + std::to_string(uid); }

  FakeDevRoot dev_;
  FakeNvml nvml_{json::object()};
};

// --- the scripts themselves ------------------------------------------------------------------

TEST(SlurmScriptFiles, PassEveryShellsSyntaxCheck) {
  for (const auto& script : {kEpilog, kProlog}) {
    struct stat st {};
    ASSERT_EQ(::stat(script.c_str(), &st), 0) << script;
    EXPECT_TRUE(st.st_mode & S_IXUSR) << script << " is not executable";
    EXPECT_EQ(read_text(script).rfind("#!/bin/sh\n", 0), 0u) << script;
    for (const std::string shell : {"sh", "bash", "dash", "busybox"}) {
      if (which(shell).empty()) continue;
      std::vector<std::string> argv{shell, "-n", script};
      if (shell == "busybox") argv = {"busybox", "sh", "-n", script};
      auto r = run_program(argv, {});
      EXPECT_EQ(r.exit_code, 0) << shell << " -n " << script << "\n" << r.err;
    }
    if (!which("shellcheck").empty()) {
      auto r = run_program({"shellcheck", "-x", "-s", "sh", "-S", "warning", script}, {});
      EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    }
  }
}

TEST(SlurmScriptFiles, TheSharedCodePassesEveryShellsSyntaxCheck) {
  for (const std::string shell : {"sh", "bash", "dash"}) {
    if (which(shell).empty()) continue;
    auto r = run_program({shell, "-n", kLibrary}, {});
    EXPECT_EQ(r.exit_code, 0) << shell << " -n " << kLibrary << "\n" << r.err;
  }
}

TEST(SlurmScriptFiles, AScriptInstalledWithoutItsSharedCodeFailsWithOneLine) {
  TempDir dir;
  std::filesystem::copy_file(kEpilog, dir.file("epilog.sh"));
  auto r = run_program({"sh", dir.file("epilog.sh")}, {"SLURM_JOB_ID=7", "SLURM_JOB_GPUS=0"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "gpureap epilog: job 7: cannot read " + dir.file("gpureap-slurm.sh") +
                       ": install it beside " + dir.file("epilog.sh") + "; draining\n");
}

// --- epilog ----------------------------------------------------------------------------------

// The same cases under the script's own #! (/bin/sh: dash on Debian) and under bash (the
// /bin/sh of RHEL-like nodes).
class SlurmEpilogShells : public SlurmScript, public ::testing::WithParamInterface<std::string> {
 protected:
  void SetUp() override {
    SlurmScript::SetUp();
    if (!GetParam().empty() && which(GetParam()).empty())
      GTEST_SKIP() << GetParam() << " is not installed";
  }
};

TEST_P(SlurmEpilogShells, EndsTheJobUsersLeftoverOnTheJobsGpuOnly) {
  Ready ready0, ready1;
  Child other_gpu([&] {
    block_all_signals();  // a signal sent to it would stay pending: proof it was sent
    hold(dev_.dev("nvidia0"));
    become_job_user();
    ready0.signal();
  });
  Child leftover([&] {
    hold(dev_.dev("nvidia1"));
    become_job_user();
    ready1.signal();
  });
  ready0.wait();
  ready1.wait();
  nvml_.write(slurm_scenario({{{"pid", other_gpu.pid()}, {"used_bytes", 2 * GiB}}},
                             {{{"pid", leftover.pid()}, {"used_bytes", 4 * GiB}}}));

  auto r = run(kEpilog, {uid_var(job_uid()), "SLURM_JOB_GPUS=1"}, GetParam());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "gpureap epilog: job 123: ended 1 process of uid " + std::to_string(job_uid()) +
                       " on GPU 1; memory released\n");
  EXPECT_EQ(end_signal(leftover.pid()), SIGTERM);
  EXPECT_TRUE(is_alive(other_gpu.pid())) << "the job's user's process on GPU 0 was ended";
  EXPECT_TRUE(no_signal_pending(other_gpu.pid()))
      << "the job's user's process on GPU 0 was signalled";
}

TEST_P(SlurmEpilogShells, DrainsWhenTheLeftoversMemoryStaysHeld) {
  Leftover leftover(dev_.dev("nvidia1"));
  // The driver keeps the context after its last holder is gone: a leak only a reset frees.
  nvml_.write(slurm_scenario(
      json::array(), {{{"pid", leftover.pid()}, {"used_bytes", 4 * GiB}, {"leaked", true}}}));

  auto r = run(kEpilog, {uid_var(job_uid()), "SLURM_JOB_GPUS=1"}, GetParam());
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err, "gpureap epilog: job 123: 4.0 GiB still held on GPU 1 after ending uid " +
                       std::to_string(job_uid()) + "'s processes; draining\n");
  EXPECT_TRUE(wait_gone(leftover.pid())) << "the leftover was not ended";
}

INSTANTIATE_TEST_SUITE_P(Shells, SlurmEpilogShells, ::testing::Values("", "bash"),
                         [](const auto& info) {
                           return info.param.empty() ? std::string("Shebang") : info.param;
                         });

using SlurmEpilog = SlurmScript;

TEST_F(SlurmEpilog, DrainsOnLeakedMemoryNoProcessHolds) {
  nvml_.write(slurm_scenario(json::array(),
                             {{{"pid", dead_pid()}, {"used_bytes", 4 * GiB}, {"leaked", true}}}));
  auto r = run(kEpilog, {uid_var(job_uid()), "SLURM_JOB_GPUS=1"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("job 123: 4.0 GiB still held on GPU 1 after ending uid"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("; draining\n"), std::string::npos) << r.err;
}

// Under slurmd (SLURMD_NODENAME), a failing script drains the node itself with gpureap's reason,
// which `sinfo -R` shows instead of Slurm's "Epilog error"; a clean one, or one told not to,
// never calls scontrol. A stand-in scontrol on PATH answers `-o show node` with the node file
// (none: a node Slurm does not know) and records the arguments of every other call, one per
// line.
class SlurmDrainReason : public SlurmScript {
 protected:
  void SetUp() override {
    SlurmScript::SetUp();
    std::ofstream(bin_.file("scontrol"))
        << "#!/bin/sh\nif [ \"$1 $2\" = '-o show' ]; then exec cat " << node() << "; fi\n"
        << "for a in \"$@\"; do printf '%s\\n' \"$a\"; done >>" << calls() << "\n";
    ASSERT_EQ(::chmod(bin_.file("scontrol").c_str(), 0755), 0);
  }
  std::string node() const { return bin_.file("node"); }
  std::string calls() const { return bin_.file("calls"); }
  std::string recorded() const {
    std::ifstream in(calls());
    return {std::istreambuf_iterator<char>(in), {}};
  }
  std::vector<std::string> slurmd_env(std::vector<std::string> more) const {
    more.push_back("SLURMD_NODENAME=node7");
    more.push_back("PATH=" + bin_.path() + ":/usr/bin:/bin");
    return more;
  }
  TempDir bin_;
};

TEST_F(SlurmDrainReason, AFailedEpilogDrainsTheNodeWithWhatItFound) {
  nvml_.write(slurm_scenario(json::array(),
                             {{{"pid", dead_pid()}, {"used_bytes", 4 * GiB}, {"leaked", true}}}));
  auto r = run(kEpilog, slurmd_env({uid_var(job_uid()), "SLURM_JOB_GPUS=1"}));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;  // scontrol worked: nothing more to say
  auto args = recorded();
  EXPECT_EQ(args.rfind("update\nNodeName=node7\nState=DRAIN\nReason=gpureap epilog: job 123: "
                       "4.0 GiB still held on GPU 1 after ending uid ",
                       0),
            0u)
      << args;
  EXPECT_EQ(std::count(args.begin(), args.end(), '\n'), 4) << args;  // one call, four words
}

TEST_F(SlurmDrainReason, APrologThatRefusesDrainsWithItsReasonAndACleanOneCallsNothing) {
  nvml_.write(slurm_scenario(json::array(),
                             {{{"pid", dead_pid()}, {"used_bytes", 4 * GiB}, {"leaked", true}}}));
  auto clean = run(kProlog, slurmd_env({"SLURM_JOB_GPUS=0"}));
  EXPECT_EQ(clean.exit_code, 0) << clean.err;
  EXPECT_EQ(recorded(), "");
  auto told_not_to = run(kProlog, slurmd_env({"SLURM_JOB_GPUS=1", "GPUREAP_DRAIN_REASON=0"}));
  EXPECT_EQ(told_not_to.exit_code, 1) << told_not_to.err;
  EXPECT_EQ(recorded(), "");
  auto refused = run(kProlog, slurmd_env({"SLURM_JOB_GPUS=1"}));
  EXPECT_EQ(refused.exit_code, 1) << refused.err;
  EXPECT_NE(recorded().find("Reason=gpureap prolog: job 123: GPU 1 has 4.0 GiB of ghost memory"),
            std::string::npos)
      << recorded();
}

// `scontrol -o show node` as Slurm 22.05 prints it: one line, State before Reason.
std::string shown_node(const std::string& state, const std::string& reason) {
  return "NodeName=node7 Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 CPUTot=1 Gres=gpu:2 "
         "NodeAddr=127.0.0.1 OS=Linux 6.1.0 #1 SMP RealMemory=1 State=" +
         state + " ThreadsPerCore=1 Partitions=debug SlurmdStartTime=2026-05-01T12:00:00 " +
         "Reason=" + reason + " [root@2026-05-01T12:00:05]\n";
}

// The epilog Slurm runs after a job the prolog refused finds the memory the prolog found: the
// node keeps the prolog's reason, which names the finding, not the job that never ran. Any
// other reason, or gpureap's on a node resumed since, is replaced.
TEST_F(SlurmDrainReason, ANodeGpureapDrainedKeepsItsFirstReason) {
  nvml_.write(slurm_scenario(json::array(),
                             {{{"pid", dead_pid()}, {"used_bytes", 4 * GiB}, {"leaked", true}}}));
  const std::string prolog_reason =
      "gpureap prolog: job 122: GPU 1 has 4.0 GiB of ghost memory (leaked-memory); not starting "
      "the job (see `gpureap doctor --gpu 1`)";
  std::ofstream(node()) << shown_node("IDLE+COMPLETING+DRAIN", prolog_reason);
  auto kept = run(kEpilog, slurmd_env({uid_var(job_uid()), "SLURM_JOB_GPUS=1"}));
  EXPECT_EQ(kept.exit_code, 1) << kept.err;
  EXPECT_EQ(recorded(), "");
  EXPECT_NE(kept.err.find("gpureap epilog: job 123: the node stays drained with gpureap's earlier "
                          "reason: " +
                          prolog_reason),
            std::string::npos)
      << kept.err;
  for (const auto& [state, reason] :
       {std::pair<std::string, std::string>{"IDLE+DRAIN", "disk"}, {"IDLE", prolog_reason}}) {
    std::ofstream(node(), std::ios::trunc) << shown_node(state, reason);
    std::filesystem::remove(calls());
    auto replaced = run(kEpilog, slurmd_env({uid_var(job_uid()), "SLURM_JOB_GPUS=1"}));
    EXPECT_EQ(replaced.exit_code, 1) << replaced.err;
    EXPECT_EQ(recorded().rfind("update\nNodeName=node7\nState=DRAIN\nReason=gpureap epilog: job "
                               "123: 4.0 GiB still held on GPU 1",
                               0),
              0u)
        << state << " " << reason << ": " << recorded();
  }
}

TEST_F(SlurmDrainReason, AnScontrolThatFailsIsSaidAndTheScriptStillFails) {
  nvml_.write(slurm_scenario(json::array(),
                             {{{"pid", dead_pid()}, {"used_bytes", 4 * GiB}, {"leaked", true}}}));
  std::ofstream(bin_.file("scontrol"), std::ios::trunc) << "#!/bin/sh\nexit 1\n";
  auto r = run(kEpilog, slurmd_env({uid_var(job_uid()), "SLURM_JOB_GPUS=1"}));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("scontrol could not set the drain reason; Slurm gives its own"),
            std::string::npos)
      << r.err;
}

TEST_F(SlurmEpilog, LeakedMemoryOnAnotherGpuIsNotTheJobsConcern) {
  nvml_.write(slurm_scenario({{{"pid", dead_pid()}, {"used_bytes", 4 * GiB}, {"leaked", true}}},
                             json::array()));
  auto r = run(kEpilog, {uid_var(job_uid()), "SLURM_JOB_GPUS=1"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
}

TEST_F(SlurmEpilog, NeverEndsAnotherUsersProcess) {
  Child someone_else = holding(dev_, "nvidia1", [&] { block_all_signals(); });
  nvml_.write(
      slurm_scenario(json::array(), {{{"pid", someone_else.pid()}, {"used_bytes", 4 * GiB}}}));
  auto r = run(kEpilog, {uid_var(other_uid()), "SLURM_JOB_GPUS=1"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_TRUE(is_alive(someone_else.pid()));
  EXPECT_TRUE(no_signal_pending(someone_else.pid()));
}

TEST_F(SlurmEpilog, ARootJobsLeftoversAreEndedButNotTheProcessesTheEpilogRunsUnder) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: the job's processes are root's";
  Child holder = holding(dev_, "nvidia1");
  nvml_.write(slurm_scenario(json::array(), {{{"pid", holder.pid()}, {"used_bytes", 4 * GiB}}}));
  // This test process stands for slurmstepd: it holds the job's GPU too, and the epilog runs
  // under it.
  int fd = hold(dev_.dev("nvidia1"));
  auto r = run(kEpilog, {"SLURM_JOB_UID=0", "SLURM_JOB_GPUS=1"});
  ::close(fd);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(end_signal(holder.pid()), SIGTERM) << r.err;
}

TEST_F(SlurmEpilog, AJobWithoutGpusNeedsNothing) {
  // Not even gpureap: a CPU-only job's epilog must not fail on a node without it.
  auto r = run(kEpilog, {uid_var(job_uid()), "GPUREAP=/nonexistent/gpureap"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  r = run(kEpilog,
          {uid_var(job_uid()), "SLURM_JOB_GPUS=NoDevFiles", "GPUREAP=/nonexistent/gpureap"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(SlurmEpilog, WithoutGpureapItCannotCheckAndSaysSo) {
  auto r = run(kEpilog, {uid_var(job_uid()), "SLURM_JOB_GPUS=1", "GPUREAP=/nonexistent/gpureap"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("gpureap not found"), std::string::npos) << r.err;
}

TEST_F(SlurmEpilog, WithoutTheJobsUidItRefuses) {
  auto r = run(kEpilog, {"SLURM_JOB_GPUS=1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("SLURM_JOB_UID is not set"), std::string::npos) << r.err;
}

TEST_F(SlurmEpilog, AWedgedDriverIsBoundedByTheTimeout) {
  if (which("timeout").empty())
    GTEST_SKIP() << "timeout(1) is not installed: nothing bounds the run";
  nvml_.write(
      {{"block_call", "nvmlDeviceGetMemoryInfo"}, {"gpus", {json::object(), json::object()}}});
  auto r = run(kEpilog, {uid_var(job_uid()), "SLURM_JOB_GPUS=1", "GPUREAP_TIMEOUT=1"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("gpureap kill on GPU 1 did not finish within 1s"), std::string::npos)
      << r.err;
}

// --- prolog ----------------------------------------------------------------------------------

using SlurmProlog = SlurmScript;

TEST_F(SlurmProlog, RefusesAGpuWithLeakedMemory) {
  nvml_.write(slurm_scenario(json::array(),
                             {{{"pid", dead_pid()}, {"used_bytes", 4 * GiB}, {"leaked", true}}}));
  auto r = run(kProlog, {"SLURM_JOB_GPUS=0,1"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_EQ(r.err.rfind("gpureap prolog: job 123: GPU 1 has 4.0 GiB of ghost memory (", 0), 0u)
      << r.err;
  EXPECT_NE(r.err.find("not starting the job"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("; draining\n"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("GPU 0"), std::string::npos) << r.err;
}

TEST_F(SlurmProlog, StartsAJobOnACleanGpu) {
  nvml_.write(slurm_scenario(json::array(),
                             {{{"pid", dead_pid()}, {"used_bytes", 4 * GiB}, {"leaked", true}}}));
  auto r = run(kProlog, {"SLURM_JOB_GPUS=0"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
}

TEST_F(SlurmProlog, RefusesAGpuWhoseGonePidIsKeptAlive) {
  auto ghost = gone_trainer(dev_, "nvidia1");  // its worker, in its group, keeps it
  nvml_.write(slurm_scenario(
      json::array(),
      {{{"pid", ghost->trainer}, {"used_bytes", 3 * GiB}, {"holders", {ghost->worker}}}}));
  auto r = run(kProlog, {"SLURM_JOB_GPUS=1"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err.rfind(
                "gpureap prolog: job 123: GPU 1 has 3.0 GiB of ghost memory (no-such-process)", 0),
            0u)
      << r.err;
  EXPECT_TRUE(is_alive(ghost->worker)) << "the prolog only looks";
}

TEST_F(SlurmProlog, RefusesMemoryNobodyHolds) {
  if (::geteuid() != 0)
    GTEST_SKIP() << "memory nobody holds is only told from a complete view (root)";
  nvml_.write(slurm_scenario(json::array(),
                             {{{"pid", dead_pid()}, {"used_bytes", 2 * GiB}, {"leaked", true}}}));
  auto r = run(kProlog, {"SLURM_JOB_GPUS=1"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(
      r.err.rfind("gpureap prolog: job 123: GPU 1 has 2.0 GiB of ghost memory (leaked-memory)", 0),
      0u)
      << r.err;
}

TEST_F(SlurmProlog, StartsTheJobBesideMemoryTheDriverKeepsForItself) {
  // Unattributed memory with no gone PID behind it is no evidence of a leak: no drain.
  nvml_.write(slurm_scenario(json::array(), json::array(), 2 * GiB));
  auto r = run(kProlog, {"SLURM_JOB_GPUS=1"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(SlurmProlog, MapsGpuUuidsToIndices) {
  nvml_.write(slurm_scenario(json::array(),
                             {{{"pid", dead_pid()}, {"used_bytes", 4 * GiB}, {"leaked", true}}}));
  std::string upper = kUuid1;
  std::transform(upper.begin(), upper.end(), upper.begin(), ::toupper);
  auto r = run(kProlog, {"CUDA_VISIBLE_DEVICES=" + upper});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("GPU 1 has 4.0 GiB"), std::string::npos) << r.err;

  r = run(kProlog,
          {"CUDA_VISIBLE_DEVICES=GPU-99999999-0000-0000-0000-000000000000", "SLURM_JOB_GPUS=0"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("no GPU has the UUID GPU-99999999-0000-0000-0000-000000000000"),
            std::string::npos)
      << r.err;
}

TEST_F(SlurmProlog, ReadsIndicesFromCudaVisibleDevicesWithoutSlurmJobGpus) {
  nvml_.write(slurm_scenario(json::array(),
                             {{{"pid", dead_pid()}, {"used_bytes", 4 * GiB}, {"leaked", true}}}));
  auto r = run(kProlog, {"CUDA_VISIBLE_DEVICES=1"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("GPU 1 has 4.0 GiB"), std::string::npos) << r.err;
}

TEST_F(SlurmProlog, StandsAsideForMigInstances) {
  nvml_.write(slurm_scenario(json::array(),
                             {{{"pid", dead_pid()}, {"used_bytes", 4 * GiB}, {"leaked", true}}}));
  auto r = run(kProlog, {"CUDA_VISIBLE_DEVICES=MIG-4b2c3d1e-0000-0000-0000-000000000000",
                         "SLURM_JOB_GPUS=1"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("MIG"), std::string::npos) << r.err;
}

TEST_F(SlurmProlog, CannotCheckWhatItCannotSee) {
  nvml_.write(slurm_scenario(json::array(), json::array()));
  auto r = run(kProlog, {"SLURM_JOB_GPUS=7"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("GPU 7 does not exist"), std::string::npos) << r.err;

  r = run(kProlog, {"SLURM_JOB_GPUS=1", "GPUREAP_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("no GPU driver to ask about GPU 1"), std::string::npos) << r.err;

  r = run(kProlog, {"SLURM_JOB_GPUS=1,gpu2"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("cannot read the job's GPUs from '1,gpu2'"), std::string::npos) << r.err;
}

TEST_F(SlurmProlog, SiteDefaultsFileOverridesTheEnvironment) {
  TempDir etc;
  std::ofstream(etc.file("gpureap-slurm")) << "GPUREAP=/nonexistent/from-defaults\n";
  nvml_.write(slurm_scenario(json::array(), json::array()));
  auto r =
      run(kProlog, {"SLURM_JOB_GPUS=1", "GPUREAP_SLURM_DEFAULTS=" + etc.file("gpureap-slurm")});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("gpureap not found"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace gpureap::testing

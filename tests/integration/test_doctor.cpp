// `gpureap doctor` and `gpureap reset` against real processes and the NVML test double.
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/ipc.h>
#include <sys/prctl.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <utime.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "support.h"

namespace gpureap::testing {
namespace {

using nlohmann::json;

json doctor_scenario(json processes, uint64_t driver_held = 0) {
  return {{"gpus",
           {{{"name", "NVIDIA H200"},
             {"uuid", "GPU-0000"},
             {"pci_bus_id", "00000000:17:00.0"},
             {"minor", 0},
             {"total_bytes", 80 * GiB},
             {"driver_held_bytes", driver_held},
             {"processes", processes}}}}};
}

struct Doctor {
  int exit_code;
  json doc;
};

Doctor doctor(const FakeDevRoot& dev, const FakeNvml& nvml, std::vector<std::string> extra = {}) {
  std::vector<std::string> args{"doctor", "--json", "--dev-root", dev.path()};
  if (std::find(extra.begin(), extra.end(), "--settle") == extra.end())
    extra.insert(extra.end(), {"--settle", "300ms"});
  args.insert(args.end(), extra.begin(), extra.end());
  auto r = run_gpureap(args, nvml.env());
  Doctor d{r.exit_code, nullptr};
  try {
    d.doc = json::parse(r.out);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not JSON: " << r.out << r.err;
  }
  return d;
}

bool remedy_has(const json& f, const std::string& text) {
  for (const auto& r : f["remedy"])
    if (r.get<std::string>().find(text) != std::string::npos) return true;
  return false;
}

TEST(Doctor, HealthyMachineSaysSoInOneLine) {
  REQUIRE_DOUBLE();
  FakeDevRoot dev;
  Child job = holding(dev, "nvidia0");
  FakeNvml nvml(doctor_scenario(json::array({{{"pid", job.pid()}, {"used_bytes", 4 * GiB}}})));
  auto d = doctor(dev, nvml);
  EXPECT_EQ(d.exit_code, 0) << d.doc.dump(2);
  EXPECT_EQ(d.doc["schema"], "gpureap.doctor/v1");
  EXPECT_EQ(d.doc["snapshot"]["schema"], "gpureap.snapshot/v1");
  for (const auto& f : d.doc["findings"]) EXPECT_EQ(f["severity"], "info") << f.dump();
  auto text = run_gpureap({"doctor", "--dev-root", dev.path(), "--settle", "0s"}, nvml.env());
  EXPECT_EQ(text.out.rfind("Healthy", 0), 0u) << text.out;
}

TEST(Doctor, GhostKeptByWorkersIsCriticalWithTheKillCommand) {
  REQUIRE_DOUBLE();
  FakeDevRoot dev;
  Ready ready;
  Child parent([&] {
    ::setpgid(0, 0);
    hold(dev.dev("nvidia0"));
    pid_t c = ::fork();
    if (c == 0) {
      for (;;) ::pause();
    }
    ready.send(c);
    ::_exit(0);
  });
  pid_t ghost = parent.pid();
  pid_t worker = static_cast<pid_t>(ready.receive());
  parent.kill_and_reap();
  FakeNvml nvml(doctor_scenario(
      json::array({{{"pid", ghost}, {"used_bytes", 8 * GiB}, {"holders", {ghost, worker}}}})));
  auto d = doctor(dev, nvml);
  EXPECT_EQ(d.exit_code, 2);
  const auto* f = finding(d.doc, "no-such-process");
  ASSERT_NE(f, nullptr) << d.doc["findings"].dump(2);
  EXPECT_EQ((*f)["severity"], "critical");
  EXPECT_EQ((*f)["memory_bytes"], 8 * GiB);
  EXPECT_EQ((*f)["pids"], json::array({ghost, worker}));
  EXPECT_EQ((*f)["gpus"], json::array({0}));
  EXPECT_TRUE(remedy_has(*f, "gpureap kill " + std::to_string(ghost)));
  // The worker that keeps it inherited its files and is an orphan: facets of this one finding,
  // not findings of their own.
  EXPECT_EQ((*f)["codes"], json::array({"no-such-process", "inherited-holder", "orphan-holder"}));
  for (const auto& x : (*f)["facets"]) EXPECT_EQ(x["pid"], worker) << x.dump();
  EXPECT_EQ((*f)["facets"].size(), 2u) << f->dump(2);
  EXPECT_EQ(finding(d.doc, "inherited-holder"), nullptr) << d.doc["findings"].dump(2);
  EXPECT_EQ(finding(d.doc, "orphan-holder"), nullptr) << d.doc["findings"].dump(2);
  ::kill(worker, SIGKILL);
  wait_gone(worker);
}

TEST(Doctor, LeakedAndReleasingAreToldApart) {
  REQUIRE_DOUBLE();
  FakeDevRoot dev;
  pid_t leaked = dead_pid(), releasing = dead_pid();
  FakeNvml nvml(doctor_scenario(
      json::array({{{"pid", leaked}, {"used_bytes", 6 * GiB}, {"leaked", true}},
                   {{"pid", releasing}, {"used_bytes", 2 * GiB}, {"release_delay_ms", 1000}}})));
  auto d = doctor(dev, nvml, {"--settle", "2500ms"});
  EXPECT_EQ(d.exit_code, 2);
  const auto* leak = finding(d.doc, "leaked-memory");
  ASSERT_NE(leak, nullptr) << d.doc["findings"].dump(2);
  EXPECT_EQ((*leak)["pids"], json::array({leaked}));
  EXPECT_EQ((*leak)["memory_bytes"], 6 * GiB);
  EXPECT_TRUE(remedy_has(*leak, "gpureap reset --gpu 0"));
  const auto* rel = finding(d.doc, "releasing");
  ASSERT_NE(rel, nullptr) << d.doc["findings"].dump(2);
  EXPECT_EQ((*rel)["pids"], json::array({releasing}));
  EXPECT_EQ((*rel)["severity"], "info");
}

TEST(Doctor, StoppedHolderAndUnreapedZombies) {
  REQUIRE_DOUBLE();
  FakeDevRoot dev;
  Child stopped = holding(dev, "nvidia0");
  ::kill(stopped.pid(), SIGSTOP);
  ASSERT_TRUE(wait_for_state(stopped.pid(), 'T'));
  Ready ready2;
  Child parent([&] {
    hold(dev.dev("nvidia0"));
    pid_t z = ::fork();
    if (z == 0) ::_exit(0);
    ready2.send(z);
  });
  pid_t zombie = static_cast<pid_t>(ready2.receive());
  ASSERT_TRUE(wait_for_state(zombie, 'Z'));
  FakeNvml nvml(doctor_scenario(json::array({{{"pid", stopped.pid()}, {"used_bytes", 5 * GiB}},
                                             {{"pid", parent.pid()}, {"used_bytes", GiB}}})));
  auto d = doctor(dev, nvml);
  EXPECT_EQ(d.exit_code, 1);
  const auto* s = finding(d.doc, "stopped-holder");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ((*s)["pids"], json::array({stopped.pid()}));
  EXPECT_EQ((*s)["memory_bytes"], 5 * GiB);
  EXPECT_TRUE(remedy_has(*s, "kill -CONT " + std::to_string(stopped.pid())));
  const auto* z = finding(d.doc, "unreaped-zombies");
  ASSERT_NE(z, nullptr);
  EXPECT_EQ((*z)["pids"], json::array({parent.pid()}));
}

// A file in the dev root's shm/ with `bytes` bytes, last touched ten minutes ago (doctor leaves
// out what changed in the last minute: a job may be between making a file and mapping it).
std::string old_shm_file(const FakeDevRoot& dev, const std::string& name, uid_t owner = 0,
                         size_t bytes = 4096) {
  ::mkdir(dev.file("shm").c_str(), 01777);
  const std::string path = dev.file("shm/" + name);
  std::ofstream(path) << std::string(bytes, 'x');
  if (owner != 0 && ::chown(path.c_str(), owner, owner) != 0) ADD_FAILURE() << "chown " << path;
  utimbuf old{::time(nullptr) - 600, ::time(nullptr) - 600};
  ::utime(path.c_str(), &old);
  return path;
}

// A System V segment with `key` whose creator exited without removing it; its id.
int orphan_segment(key_t key) {
  int pipefd[2];
  if (::pipe(pipefd) != 0) return -1;
  pid_t creator = ::fork();
  if (creator == 0) {
    int id = ::shmget(key, 1 << 20, IPC_CREAT | IPC_EXCL | 0600);
    if (::write(pipefd[1], &id, sizeof id) != sizeof id) ::_exit(1);
    ::_exit(0);
  }
  int shmid = -1;
  if (::read(pipefd[0], &shmid, sizeof shmid) != static_cast<ssize_t>(sizeof shmid)) shmid = -1;
  ::waitpid(creator, nullptr, 0);
  ::close(pipefd[0]);
  ::close(pipefd[1]);
  return shmid;
}

// The remedy commands of `f` that name `text` (a dev root's path, a segment's id).
std::vector<std::string> commands_naming(const json* f, const std::string& text) {
  std::vector<std::string> out;
  if (f)
    for (const auto& step : (*f)["steps"])
      if (step["command"].get<std::string>().find(text) != std::string::npos)
        out.push_back(step["command"]);
  return out;
}

TEST(Doctor, IpcResidue) {
  REQUIRE_DOUBLE();
  // The segment is residue to every doctor on the machine: in an IPC namespace of this test's
  // own, a test running beside it (a healthy machine's) does not see it.
  if (::unshare(CLONE_NEWIPC) != 0) GTEST_SKIP() << "cannot make an IPC namespace here";
  FakeDevRoot dev;
  const int shmid = orphan_segment(IPC_PRIVATE);
  ASSERT_GE(shmid, 0);
  // What a killed DataLoader leaves: "torch_<pid>_<random>_<counter>", nobody holds it.
  std::string leftover = old_shm_file(dev, "torch_4242_2788394957_0");
  FakeNvml nvml(doctor_scenario(json::array()));
  auto d = doctor(dev, nvml);
  ::shmctl(shmid, IPC_RMID, nullptr);
  const auto* f = finding(d.doc, "ipc-residue");
  ASSERT_NE(f, nullptr) << d.doc["findings"].dump(2);
  EXPECT_TRUE(remedy_has(*f, "ipcrm -m " + std::to_string(shmid)));
  EXPECT_EQ(commands_naming(f, dev.path()), std::vector<std::string>{"rm " + leftover});
  EXPECT_EQ(d.exit_code, 1);
}

// Nothing uses these either, but no evidence says a job left them: the lock table of podman
// (removing it breaks container locking until `podman system renumber`), a dataset a user staged
// in /dev/shm, a named semaphore a program keeps, a segment with a key. None gets a remedy that
// removes it; what may be a user's is a note with the commands that check it. The PyTorch
// leftover beside them, and a file whose owner runs nothing, are still residue.
TEST(Doctor, ResidueIsOnlyWhatAGoneJobLeft) {
  REQUIRE_DOUBLE();
  if (::geteuid() != 0) GTEST_SKIP() << "the files must belong to other users: run as root";
  constexpr uid_t kNobody = 65534;
  constexpr uid_t kNoProcess = 60999;  // an account that runs nothing
  Child user([] {
    if (::setgid(kNobody) != 0 || ::setuid(kNobody) != 0) ::_exit(1);
  });
  ASSERT_TRUE(wait_until([&] { return proc_status_field(user.pid(), "Uid").find("65534") == 0; }))
      << proc_status_field(user.pid(), "Uid");
  FakeDevRoot dev;
  const std::string podman = old_shm_file(dev, "libpod_lock", 0, 2048 * 40);
  const std::string dataset = old_shm_file(dev, "imagenet-val.arrow", kNobody, 1 << 20);
  const std::string semaphore = old_shm_file(dev, "sem.render-queue", kNobody, 32);
  const std::string torch = old_shm_file(dev, "torch_4242_2788394957_0");
  const std::string abandoned = old_shm_file(dev, "scratch.bin", kNoProcess);
  const int keyed = orphan_segment(static_cast<key_t>(0x6a7e0000 + (::getpid() & 0xffff)));
  ASSERT_GE(keyed, 0) << std::strerror(errno);
  FakeNvml nvml(doctor_scenario(json::array()));
  auto d = doctor(dev, nvml);
  ::shmctl(keyed, IPC_RMID, nullptr);
  const std::string id = " " + std::to_string(keyed);

  const auto* left = finding(d.doc, "ipc-residue");
  ASSERT_NE(left, nullptr) << d.doc["findings"].dump(2);
  EXPECT_EQ(commands_naming(left, dev.path()),
            (std::vector<std::string>{"rm " + torch, "rm " + abandoned}));
  EXPECT_FALSE(remedy_has(*left, "ipcrm -m" + id)) << left->dump(2);
  const auto* unused = finding(d.doc, "ipc-unused");
  ASSERT_NE(unused, nullptr) << d.doc["findings"].dump(2);
  EXPECT_EQ((*unused)["severity"], "info");
  EXPECT_EQ(commands_naming(unused, dev.path()),
            (std::vector<std::string>{"fuser -v " + dataset, "fuser -v " + semaphore}));
  EXPECT_TRUE(remedy_has(*unused, "ipcs -m -i" + id)) << unused->dump(2);
  // No remedy anywhere removes what may be kept, and podman's table is not named at all.
  for (const auto& f : d.doc["findings"]) {
    for (const auto& step : f["steps"]) {
      const std::string command = step["command"];
      if (command.rfind("rm ", 0) == 0 || command.rfind("ipcrm", 0) == 0) {
        EXPECT_EQ(command.find(dataset), std::string::npos) << command;
        EXPECT_EQ(command.find(semaphore), std::string::npos) << command;
        EXPECT_EQ(command.find(podman), std::string::npos) << command;
        EXPECT_NE(command, "ipcrm -m" + id);
      }
    }
    EXPECT_EQ(f.dump().find("libpod_lock"), std::string::npos) << f.dump(2);
  }
}

// Names are anyone's to set: a process's name and a file's in shm/ with newlines in them leave
// every remedy one line, in the JSON (no newline in any string) and on the terminal, and the
// file's remedy, run by a shell, removes that very file.
TEST(Doctor, EveryRemedyIsOneLineWhateverTheNames) {
  REQUIRE_DOUBLE();
  if (::geteuid() != 0) GTEST_SKIP() << "the leftover must be another user's: run as root";
  FakeDevRoot dev;
  Child stopped = holding(dev, "nvidia0", [] { ::prctl(PR_SET_NAME, "evil\nrm -rf ~"); });
  ::kill(stopped.pid(), SIGSTOP);
  ASSERT_TRUE(wait_for_state(stopped.pid(), 'T'));
  // Its owner runs no process: what a gone job left. The other one's owner (root) runs some.
  std::string leftover = old_shm_file(dev, "x\ny", 60999);
  std::string kept = old_shm_file(dev, "k\x1b[31m'y");
  FakeNvml nvml(doctor_scenario(json::array({{{"pid", stopped.pid()}, {"used_bytes", 2 * GiB}}})));
  auto d = doctor(dev, nvml);
  ASSERT_NE(finding(d.doc, "stopped-holder"), nullptr) << d.doc["findings"].dump(2);
  const auto* ipc = finding(d.doc, "ipc-residue");
  ASSERT_NE(ipc, nullptr) << d.doc["findings"].dump(2);
  for (const auto& f : d.doc["findings"])
    for (const char* field : {"remedy", "evidence"})
      for (const auto& line : f[field])
        EXPECT_EQ(line.get<std::string>().find_first_of("\n\r"), std::string::npos)
            << f["code"] << ": " << line;
  const std::string rm = "rm $'" + dev.file("shm/x") + "\\ny'";
  ASSERT_TRUE(remedy_has(*ipc, rm)) << (*ipc)["remedy"].dump(2);
  const auto* unused = finding(d.doc, "ipc-unused");
  ASSERT_NE(unused, nullptr) << d.doc["findings"].dump(2);
  EXPECT_TRUE(remedy_has(*unused, "fuser -v $'" + dev.file("shm/k") + "\\x1b[31m\\'y'"))
      << (*unused)["remedy"].dump(2);

  auto text =
      run_gpureap({"doctor", "--no-color", "--dev-root", dev.path(), "--settle", "0s"}, nvml.env());
  // A step of the remedy, on a line of its own: "  run:  COMMAND" or "  then: COMMAND".
  EXPECT_TRUE(text.out.find("\n  run:  " + rm + "\n") != std::string::npos ||
              text.out.find("\n  then: " + rm + "\n") != std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("evil\\nrm -rf ~"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("\nrm -rf ~"), std::string::npos) << text.out;

  auto ran = run_program_in({"bash", "-c", rm}, {"PATH=/usr/bin:/bin"});
  EXPECT_EQ(ran.exit_code, 0) << ran.err;
  EXPECT_NE(::access(leftover.c_str(), F_OK), 0) << "the remedy named another file";
}

TEST(Doctor, DriverMismatchIsCritical) {
  REQUIRE_DOUBLE();
  FakeDevRoot dev;
  auto scenario = doctor_scenario(json::array());
  scenario["init_error"] = "lib_rm_version_mismatch";
  FakeNvml nvml(scenario);
  auto d = doctor(dev, nvml);
  const auto* f = finding(d.doc, "driver-mismatch");
  ASSERT_NE(f, nullptr) << d.doc["findings"].dump(2);
  EXPECT_EQ((*f)["severity"], "critical");
  EXPECT_EQ(d.exit_code, 2);
}

TEST(Reset, RefusesWhileAProcessHoldsTheGpu) {
  REQUIRE_DOUBLE();
  FakeDevRoot dev;
  Child job = holding(dev, "nvidia0");
  FakeNvml nvml(doctor_scenario(json::array()));
  FakeNvidiaSmi smi;
  auto env = nvml.env();
  env.push_back(smi.path_env());
  auto r = run_gpureap({"reset", "--gpu", "0", "--yes", "--dev-root", dev.path()}, env);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("PID " + std::to_string(job.pid())), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("  end it first: gpureap kill " + std::to_string(job.pid()) + "\n"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(smi.args(), "");  // never ran
}

// A gone trainer listed on GPUs 0 and 1 left a worker on each GPU's file. `kill --gpu 0` would
// end both (each keeps the trainer's memory), but only the one holding GPU 0's file blocks its
// reset: the refusal names that one, and the command for it alone.
TEST(Reset, TheRefusalNamesExactlyTheBlockersAndTheCommandForThem) {
  REQUIRE_DOUBLE();
  FakeDevRoot dev;
  Ready ready;
  Child trainer([&] {
    ::setpgid(0, 0);
    // Each worker holds the files open at its fork: GPU 1's, then GPU 0's alone.
    int gpu1 = hold(dev.dev("nvidia1"));
    for (int gpu : {1, 0}) {
      pid_t worker = ::fork();
      if (worker == 0) {
        for (;;) ::pause();
      }
      ready.send(worker);
      if (gpu == 1) {
        ::close(gpu1);
        hold(dev.dev("nvidia0"));
      }
    }
    ::_exit(0);
  });
  const pid_t gone = trainer.pid();
  const pid_t on_gpu1 = static_cast<pid_t>(ready.receive());
  const pid_t on_gpu0 = static_cast<pid_t>(ready.receive());
  KillStrays strays{{on_gpu1, on_gpu0}};
  trainer.kill_and_reap();
  json scenario = doctor_scenario(
      json::array({{{"pid", gone}, {"used_bytes", 4 * GiB}, {"holders", {on_gpu0}}}}));
  scenario["gpus"].push_back(
      {{"name", "NVIDIA H200"},
       {"uuid", "GPU-1111"},
       {"pci_bus_id", "00000000:18:00.0"},
       {"minor", 1},
       {"total_bytes", 80 * GiB},
       {"processes",
        json::array({{{"pid", gone}, {"used_bytes", 4 * GiB}, {"holders", {on_gpu1}}}})}});
  FakeNvml nvml(scenario);
  FakeNvidiaSmi smi;
  auto env = nvml.env();
  env.push_back(smi.path_env());
  // What --gpu 0 would plan: both workers.
  auto plan = parse_output(
      run_gpureap({"kill", "--json", "--gpu", "0", "--dry-run", "--dev-root", dev.path()}, env));
  EXPECT_FALSE(entry_of(plan["plan"]["targets"], on_gpu1).is_null()) << plan.dump(2);
  EXPECT_FALSE(entry_of(plan["plan"]["targets"], on_gpu0).is_null()) << plan.dump(2);

  auto r = run_gpureap({"reset", "--gpu", "0", "--dry-run", "--dev-root", dev.path()}, env);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("gpureap: refusing to reset GPU 0: this process uses it, and a reset "
                       "would end it:\n  PID " +
                       std::to_string(on_gpu0) + " ("),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("\n  end it first: gpureap kill " + std::to_string(on_gpu0) + "\n"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("PID " + std::to_string(on_gpu1)), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("--gpu"), std::string::npos) << r.err;
  EXPECT_EQ(smi.args(), "");  // never ran
}

TEST(Reset, RunsNvidiaSmiWhenNothingHoldsTheGpu) {
  REQUIRE_DOUBLE();
  if (::geteuid() != 0) GTEST_SKIP() << "a reset needs root";
  FakeDevRoot dev;
  FakeNvml nvml(doctor_scenario(json::array(), 3 * GiB));
  FakeNvidiaSmi smi;
  auto env = nvml.env();
  env.push_back(smi.path_env());
  auto dry = run_gpureap({"reset", "--gpu", "0", "--dry-run", "--dev-root", dev.path()}, env);
  EXPECT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_EQ(smi.args(), "");
  auto no_tty = run_gpureap({"reset", "--gpu", "0", "--dev-root", dev.path()}, env);
  EXPECT_EQ(no_tty.exit_code, 2);
  EXPECT_NE(no_tty.err.find("--yes"), std::string::npos);
  // The stand-in "frees" the memory: the scenario no longer has driver-held bytes afterwards.
  std::ofstream(smi.file("nvidia-smi"), std::ios::app);
  auto r = run_gpureap({"reset", "--gpu", "0", "--yes", "--dev-root", dev.path()}, env);
  EXPECT_EQ(smi.args(), "--gpu-reset -i 0");
  EXPECT_NE(r.out.find("GPU 0 reset"), std::string::npos) << r.out << r.err;
}

// A dry run runs nothing, so it needs no tool: without nvidia-smi on PATH it still shows the
// whole plan, and says what to install before the real reset.
TEST(Reset, DryRunNeedsNoNvidiaSmi) {
  REQUIRE_DOUBLE();
  if (::geteuid() != 0) GTEST_SKIP() << "a reset's check of every holder needs root";
  FakeDevRoot dev;
  FakeNvml nvml(doctor_scenario(json::array(), 3 * GiB));
  TempDir empty;  // PATH with no nvidia-smi
  auto env = nvml.env();
  env.push_back("PATH=" + empty.path());
  auto dry = run_gpureap({"reset", "--gpu", "0", "--dry-run", "--dev-root", dev.path()}, env);
  EXPECT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_EQ(dry.out,
            "GPU 0 uses 3.0 GiB and nothing holds it. Would run: nvidia-smi --gpu-reset -i 0\n"
            "nvidia-smi is not on PATH here; install the NVIDIA driver utilities, or add their "
            "directory to PATH\n");
  EXPECT_EQ(dry.err, "");
  // Without --dry-run the same PATH is refused, naming the tool and what to install.
  auto real = run_gpureap({"reset", "--gpu", "0", "--yes", "--dev-root", dev.path()}, env);
  EXPECT_EQ(real.exit_code, 2) << real.err;
  EXPECT_EQ(real.err,
            "gpureap: nvidia-smi was not found on PATH\n"
            "  install the NVIDIA driver utilities, or add their directory to PATH\n");
  EXPECT_EQ(real.out, "");
}

TEST(Reset, ExplainsWhyNvidiaSmiRefused) {
  REQUIRE_DOUBLE();
  if (::geteuid() != 0) GTEST_SKIP() << "a reset needs root";
  FakeDevRoot dev;
  FakeNvml nvml(doctor_scenario(json::array()));
  FakeNvidiaSmi smi(
      3,
      "Unable to reset this GPU because it is being used by some other process (e.g. CUDA "
      "application, graphics application like X server, monitoring application like other instance "
      "of nvidia-smi). Please first kill all processes using this GPU and all compute applications "
      "running in the system. GPU is in use by another client.");
  auto env = nvml.env();
  env.push_back(smi.path_env());
  auto r = run_gpureap({"reset", "--gpu", "0", "--yes", "--dev-root", dev.path()}, env);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("another client"), std::string::npos) << r.err;
}

TEST(Reset, NvidiaSmiMissing) {
  REQUIRE_DOUBLE();
  if (::geteuid() != 0) GTEST_SKIP() << "a reset needs root";
  FakeDevRoot dev;
  FakeNvml nvml(doctor_scenario(json::array()));
  TempDir empty;
  auto env = nvml.env();
  env.push_back("PATH=" + empty.path());
  auto r = run_gpureap({"reset", "--gpu", "0", "--yes", "--dev-root", dev.path()}, env);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("nvidia-smi was not found"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace gpureap::testing

namespace gpureap::testing {
namespace {

TEST(DoctorFix, EndsTheGhostKeepersAndLeavesThePausedJobAlone) {
  REQUIRE_DOUBLE();
  FakeDevRoot dev;
  Ready ready;
  Child parent([&] {
    ::setpgid(0, 0);
    hold(dev.dev("nvidia0"));
    for (int i = 0; i < 2; ++i) {
      pid_t c = ::fork();
      if (c == 0) {
        for (;;) ::pause();
      }
      ready.send(c);
    }
    ::_exit(0);
  });
  pid_t ghost = parent.pid();
  pid_t w1 = static_cast<pid_t>(ready.receive()), w2 = static_cast<pid_t>(ready.receive());
  parent.kill_and_reap();
  Child stopped = holding(dev, "nvidia0");
  ::kill(stopped.pid(), SIGSTOP);
  ASSERT_TRUE(wait_for_state(stopped.pid(), 'T'));
  FakeNvml nvml(doctor_scenario(
      json::array({{{"pid", ghost}, {"used_bytes", 8 * GiB}, {"holders", {ghost, w1, w2}}},
                   {{"pid", stopped.pid()}, {"used_bytes", 2 * GiB}}})));
  auto before = doctor(dev, nvml);
  EXPECT_EQ(before.exit_code, 2);

  // Without a terminal --fix needs --yes, and does nothing without it: it shows the plan and
  // says how to proceed, and no "After the fix" follows.
  auto refused = run_gpureap(
      {"doctor", "--fix", "--dev-root", dev.path(), "--settle", "0s", "--no-color"}, nvml.env());
  EXPECT_TRUE(::kill(w1, 0) == 0 && ::kill(stopped.pid(), 0) == 0);
  EXPECT_NE(refused.err.find("gpureap doctor --fix --yes"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find(std::to_string(w1)), std::string::npos) << "the plan: " << refused.err;
  EXPECT_EQ(refused.out.find("After the fix"), std::string::npos) << refused.out;
  EXPECT_EQ(refused.out.find("Nothing was signalled"), std::string::npos) << refused.out;

  auto fixed = run_gpureap(
      {"doctor", "--fix", "--yes", "--json", "--dev-root", dev.path(), "--settle", "0s"},
      nvml.env());
  // The paused job is alive: a person resumes or ends it, so its warning stays.
  EXPECT_EQ(fixed.exit_code, 1) << fixed.out << fixed.err;
  auto doc = json::parse(fixed.out);
  for (const auto& f : doc["findings"]) {
    if (f["severity"] != "info") {
      EXPECT_EQ(f["code"], "stopped-holder") << f.dump();
    }
  }
  EXPECT_TRUE(wait_gone(w1));
  EXPECT_TRUE(wait_gone(w2));
  EXPECT_TRUE(is_alive(stopped.pid())) << "doctor --fix never ends a paused job";
  EXPECT_EQ(("\n" + refused.err).find("\n" + std::to_string(stopped.pid()) + " "),
            std::string::npos)
      << "nor plans it (a plan row starts with its PID): " << refused.err;
  stopped.kill_and_reap();
  EXPECT_NE(refused.exit_code, 0);
}

}  // namespace
}  // namespace gpureap::testing

// `gpureap kill`'s selection algebra against real processes and the NVML test double: selectors
// (PIDs, --ghosts, --stopped) choose, --gpu and --user only narrow what they chose. Each case is
// a dry run whose whole plan is asserted: what it must leave alone as much as what it finds.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>

#include "support.h"

namespace gpureap::testing {
namespace {

using nlohmann::json;

// GPU 0: a healthy job (trainer + a worker sharing its file), a paused job, and a zombie (a job's
// leader) whose child kept its file. GPU 1: a trainer that is gone, kept by its orphaned worker.
struct KillScopeScene {
  FakeDevRoot dev;
  pid_t trainer = 0, worker = 0, paused = 0, zombie = 0, zombie_child = 0;
  std::vector<std::unique_ptr<Child>> children;
  std::unique_ptr<GoneTrainer> ghost;
  KillStrays strays;

  KillScopeScene() {
    Ready job;
    children.push_back(std::make_unique<Child>([&] {
      hold(dev.dev("nvidia0"));
      if (::fork() == 0) {
        job.send(::getpid());
        for (;;) ::pause();
      }
    }));
    trainer = children.back()->pid();
    worker = static_cast<pid_t>(job.receive());
    children.push_back(std::make_unique<Child>(holding(dev, "nvidia0")));
    paused = children.back()->pid();
    ::kill(paused, SIGSTOP);
    EXPECT_TRUE(wait_for_state(paused, 'T'));
    Ready orphaned;
    children.push_back(std::make_unique<Child>([&] {
      ::setpgid(0, 0);  // its own job's leader: its child is its kin on the kernel's word
      hold(dev.dev("nvidia0"));
      if (::fork() == 0) {
        orphaned.send(::getpid());
        for (;;) ::pause();
      }
      ::_exit(0);  // a zombie until the test reaps it
    }));
    zombie = children.back()->pid();
    zombie_child = static_cast<pid_t>(orphaned.receive());
    EXPECT_TRUE(wait_for_state(zombie, 'Z'));
    ghost = gone_trainer(dev, "nvidia1");
    strays.pids = {worker, zombie_child};
  }

  json scenario() const {
    auto p = [](pid_t pid, uint64_t bytes) { return json{{"pid", pid}, {"used_bytes", bytes}}; };
    return {{"gpus",
             {{{"name", "NVIDIA H200"},
               {"uuid", "GPU-0000"},
               {"minor", 0},
               {"total_bytes", 80 * GiB},
               {"processes", json::array({p(trainer, 10 * GiB),
                                          p(paused, 4 * GiB),
                                          {{"pid", zombie},
                                           {"used_bytes", 3 * GiB},
                                           {"holders", {zombie, zombie_child}}}})}},
              {{"name", "NVIDIA H200"},
               {"uuid", "GPU-0001"},
               {"minor", 1},
               {"total_bytes", 80 * GiB},
               // The driver keeps a context while a holder of its file lives.
               {"processes", json::array({{{"pid", ghost->trainer},
                                           {"used_bytes", 8 * GiB},
                                           {"holders", {ghost->trainer, ghost->worker}}}})}}}}};
  }
};

TEST(KillScope, EverySelectorWithEveryFilterPlansExactlyWhatItNames) {
  REQUIRE_DOUBLE();
  KillScopeScene s;
  FakeNvml nvml(s.scenario());
  auto plan = [&](std::vector<std::string> extra) {
    std::vector<std::string> args{"kill", "--json", "--dry-run", "--dev-root", s.dev.path()};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_gpureap(args, nvml.env());
  };
  struct Case {
    std::vector<std::string> args;
    std::vector<pid_t> targets;
    std::string selection;
  };
  const std::string me = std::to_string(::getuid());
  std::vector<Case> cases{
      {{"--ghosts"}, {s.ghost->worker, s.zombie_child}, "ghosts"},
      {{"--ghosts", "--gpu", "0"}, {s.zombie_child}, "ghosts on GPU 0"},
      {{"--ghosts", "--gpu", "1"}, {s.ghost->worker}, "ghosts on GPU 1"},
      {{"--ghosts", "--user", me}, {s.ghost->worker, s.zombie_child}, "ghosts of user " + me},
      {{"--ghosts", "--gpu", "1", "--user", me},
       {s.ghost->worker},
       "ghosts on GPU 1 of user " + me},
      {{"--stopped"}, {s.paused}, "stopped holders"},
      {{"--stopped", "--gpu", "1"}, {}, "stopped holders on GPU 1"},
      {{std::to_string(s.trainer), std::to_string(s.ghost->trainer), "--gpu", "1"},
       {s.ghost->worker},
       "PIDs " + std::to_string(s.trainer) + ", " + std::to_string(s.ghost->trainer) + " on GPU 1"},
      {{"--gpu", "0"}, {s.trainer, s.worker, s.paused, s.zombie_child}, "holders of GPU 0"},
      {{"--gpu", "1"}, {s.ghost->worker}, "holders of GPU 1"},
  };
  for (const auto& c : cases) {
    std::string what;
    for (const auto& a : c.args) what += a + " ";
    auto r = plan(c.args);
    EXPECT_EQ(r.exit_code, c.targets.empty() ? 3 : 0) << what << r.err;
    auto doc = parse_output(r);
    EXPECT_EQ(planned_pids(doc), sorted(c.targets)) << what << r.out;
    EXPECT_EQ(doc["plan"]["selection"], c.selection) << what;
  }
  // The human plan starts with what was chosen, in words.
  auto text = run_gpureap(
      {"kill", "--dry-run", "--no-color", "--ghosts", "--gpu", "0", "--dev-root", s.dev.path()},
      nvml.env());
  EXPECT_EQ(text.out.rfind("ghosts on GPU 0: 1 process to signal (SIGTERM", 0), 0u) << text.out;
  for (pid_t alive : {s.trainer, s.worker, s.paused, s.zombie_child, s.ghost->worker})
    EXPECT_TRUE(is_alive(alive)) << alive << " was signalled by a dry run";
}

TEST(KillScope, AnUnknownUserOrGpuIsTheSameErrorInEveryCommand) {
  REQUIRE_DOUBLE();
  FakeDevRoot dev;
  Child job = holding(dev, "nvidia0");
  json gpu0 = {{"name", "NVIDIA H200"},
               {"uuid", "GPU-0000"},
               {"minor", 0},
               {"total_bytes", 80 * GiB},
               {"processes", json::array({{{"pid", job.pid()}, {"used_bytes", GiB}}})}};
  FakeNvml nvml(json{{"gpus", json::array({gpu0})}});
  const std::vector<std::string> roots{"--dev-root", dev.path()};
  auto with = [&](std::vector<std::string> args) {
    args.insert(args.end(), roots.begin(), roots.end());
    return run_gpureap(args, nvml.env());
  };
  const std::string no_gpu = "gpureap: GPU 7 does not exist\n";
  for (auto args : std::vector<std::vector<std::string>>{{"ps", "--gpu", "7"},
                                                         {"kill", "--dry-run", "--gpu", "7"},
                                                         {"kill", "--ghosts", "--gpu", "7"},
                                                         {"reset", "--dry-run", "--gpu", "7"}}) {
    auto r = with(args);
    EXPECT_EQ(r.exit_code, 2) << args[0] << ": " << r.err;
    EXPECT_EQ(r.err.rfind(no_gpu, 0), 0u) << args[0] << ": " << r.err;
    EXPECT_NE(r.err.find("this machine has 1 GPU, GPU 0"), std::string::npos) << r.err;
  }
  auto doctor = with({"doctor", "--gpu", "7", "--settle", "0s"});
  EXPECT_EQ(doctor.exit_code, 3) << "doctor's status for a bad option: " << doctor.err;
  EXPECT_EQ(doctor.err.rfind(no_gpu, 0), 0u) << doctor.err;
  // An instance the GPU does not have, an unknown UUID, a typo: one resolver's words on every
  // path that takes --gpu.
  for (std::string bad : {"0/3", "GPU-9999", "0/x"}) {
    std::string words;
    for (auto args :
         std::vector<std::vector<std::string>>{{"ps", "--gpu", bad},
                                               {"kill", "--dry-run", "--gpu", bad},
                                               {"doctor", "--gpu", bad, "--settle", "0s"}}) {
      auto r = with(args);
      EXPECT_EQ(r.exit_code, args[0] == "doctor" ? 3 : 2) << args[0] << " " << bad << ": " << r.err;
      auto first = r.err.substr(0, r.err.find('\n'));
      EXPECT_EQ(first.rfind("gpureap: ", 0), 0u) << r.err;
      if (words.empty()) words = first;
      EXPECT_EQ(first, words) << args[0] << " " << bad;
    }
  }
  for (auto args : std::vector<std::vector<std::string>>{
           {"ps", "--user", "no-such-user-xyz"},
           {"kill", "--dry-run", "--ghosts", "--user", "no-such-user-xyz"}}) {
    auto r = with(args);
    EXPECT_EQ(r.exit_code, 2) << args[0];
    EXPECT_EQ(r.err.rfind("gpureap: no user named \"no-such-user-xyz\"", 0), 0u) << r.err;
    EXPECT_TRUE(r.out.empty() || r.out.find("no-such-user") == std::string::npos) << r.out;
  }
}

}  // namespace
}  // namespace gpureap::testing

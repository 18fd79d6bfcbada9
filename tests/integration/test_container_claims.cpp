// A user forges a container's cgroup name, and gpureap does not believe it. Real processes of a
// machine's tree (container_machine.h) and the NVML test double:
//   - the victim's container, run by root: its init V in the root-owned cgroup
//     /system.slice/docker-<id>.scope, with docker's state naming V as its init and the pod
//     research/bert-0; V's trainer W (listed on GPU 1), and a worker W_keep that keeps a gone
//     trainer T_v's context (V started T_v, which forked W_keep and exited);
//   - uid 65534, who makes docker-<the same id>.scope in the cgroup subtree systemd hands every
//     logged-in user (user@65534.service) and moves in: A (listed on GPU 0) and A_keep, which
//     keeps its gone trainer T_a's context.
// What gpureap shows, exports, suggests and matches for A and A_keep must name no container,
// charge no pod and stop nothing; W and W_keep stay the victim's, verified and named.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "container_machine.h"
#include "support.h"

namespace gpureap::testing {
namespace {

using nlohmann::json;

using namespace forgery;
const std::string kForgedWhy =
    "cgroup " + kForged + " lies in user@65534.service, the subtree systemd delegates to that user";

struct ClaimsScene {
  ContainerMachine m;
  pid_t v = 0, w = 0, w_keep = 0, t_v = 0;  // the victim's container
  pid_t a = 0, a_keep = 0, t_a = 0;         // uid 65534's forgery
  std::unique_ptr<FakeNvml> nvml;

  std::vector<std::string> roots() const {
    return {"--proc-root", m.proc_root(), "--dev-root", m.dev_root(),     "--sys-root",
            m.sys_root(),  "--kmsg",      "/dev/null",  "--runtime-root", m.root()};
  }
};

pid_t read_pid(const std::string& path) {
  pid_t pid = 0;
  std::ifstream(path) >> pid;
  return pid;
}

// In a spawned body: a trainer in a session of its own opens `dev` and forks a worker that
// inherits it, then exits; the body reaps it. The trainer's and the worker's PIDs go to
// `<pids>/<name>.trainer` and `.worker`.
void gone_trainer_with_worker(const std::string& dev, const std::string& pids,
                              const std::string& name) {
  pid_t trainer = ::fork();
  if (trainer == 0) {
    ::setsid();
    int fd = ::open(dev.c_str(), O_RDONLY);
    if (fd < 0) ::_exit(1);
    pid_t worker = ContainerMachine::fork_ready([] {}, "");
    std::ofstream(pids + "/" + name + ".worker") << worker;
    ::_exit(0);
  }
  ::waitpid(trainer, nullptr, 0);
  std::ofstream(pids + "/" + name + ".trainer") << trainer;
}

std::unique_ptr<ClaimsScene> make_scene() {
  auto s = std::make_unique<ClaimsScene>();
  auto& m = s->m;
  const std::string pids = m.path("pids");
  std::filesystem::create_directories(pids);
  ::chmod(pids.c_str(), 0777);
  m.make_cgroup(kVictim);
  m.make_cgroup(kUserManager, kForger);

  const std::string dev1 = m.path("dev/nvidia1"), dev0 = m.path("dev/nvidia0");
  s->v = m.spawn(
      [&] {
        pid_t w = ContainerMachine::fork_ready([] {}, dev1);
        std::ofstream(pids + "/w") << w;
        gone_trainer_with_worker(dev1, pids, "v");
      },
      "");
  const std::string fs = m.cgroup_fs();
  s->a = m.spawn([&] {
    ContainerMachine::become(kForger);
    ContainerMachine::make_cgroup_tree(fs, kForged);
    gone_trainer_with_worker(dev0, pids, "a");
  });
  s->w = read_pid(pids + "/w");
  s->w_keep = read_pid(pids + "/v.worker");
  s->t_v = read_pid(pids + "/v.trainer");
  s->a_keep = read_pid(pids + "/a.worker");
  s->t_a = read_pid(pids + "/a.trainer");
  for (pid_t p : {s->w, s->w_keep, s->a_keep}) m.adopt(p);
  for (pid_t p : {s->v, s->w, s->w_keep}) m.enter(p, kVictim);
  for (pid_t p : {s->a, s->a_keep}) m.enter(p, kForged);
  m.docker_container(kId, "trainer", s->v, "research/bert-0");

  auto gpu = [](unsigned minor, json processes) {
    return json{{"name", "NVIDIA H200"},
                {"uuid", "GPU-000" + std::to_string(minor)},
                {"pci_bus_id", "00000000:1" + std::to_string(minor) + ":00.0"},
                {"minor", minor},
                {"total_bytes", 80 * GiB},
                {"processes", processes}};
  };
  s->nvml = std::make_unique<FakeNvml>(json{
      {"gpus",
       {gpu(0, json::array({{{"pid", s->a}, {"used_bytes", 4 * GiB}},
                            {{"pid", s->t_a}, {"used_bytes", 8 * GiB}, {"holders", {s->a_keep}}}})),
        gpu(1, json::array(
                   {{{"pid", s->w}, {"used_bytes", 2 * GiB}},
                    {{"pid", s->t_v}, {"used_bytes", 6 * GiB}, {"holders", {s->w_keep}}}}))}}});
  return s;
}

class ContainerClaims : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_DOUBLE();
    if (::geteuid() != 0) GTEST_SKIP() << "handing a cgroup subtree to uid 65534 needs root";
    const std::string tmp = std::filesystem::temp_directory_path().string();
    if (!ContainerMachine::user_reaches(kForger, tmp))
      GTEST_SKIP() << "uid " << kForger << " cannot reach " << tmp
                   << " (a folder above it only root may enter, as a chroot's root made by "
                      "mktemp -d): the forger's processes cannot run there";
    s_ = make_scene();
    ASSERT_GT(s_->a_keep, 0);
    ASSERT_GT(s_->w_keep, 0);
    struct stat st {};
    ASSERT_EQ(::stat((s_->m.cgroup_fs() + kForged).c_str(), &st), 0);
    ASSERT_EQ(st.st_uid, kForger) << "uid 65534 made the forged cgroup itself";
  }
  std::vector<std::string> args(std::vector<std::string> command) const {
    auto roots = s_->roots();
    command.insert(command.end(), roots.begin(), roots.end());
    return command;
  }
  std::unique_ptr<ClaimsScene> s_;
};

json victim_container(const std::string& why) {
  return {{"runtime", "docker"},
          {"id", kId},
          {"pod_uid", nullptr},
          {"cgroup", kVictim},
          {"verified", true},
          {"verification", why},
          {"name", "trainer"},
          {"pod_name", "bert-0"},
          {"pod_namespace", "research"},
          {"display_name", "research/bert-0"}};
}

const json kForgedContainer = {
    {"runtime", "docker"},      {"id", kId},
    {"pod_uid", nullptr},       {"cgroup", kForged},
    {"verified", false},        {"verification", kForgedWhy},
    {"name", nullptr},          {"pod_name", nullptr},
    {"pod_namespace", nullptr}, {"display_name", "unverified docker:" + kShort}};

TEST_F(ContainerClaims, PsShowsTheForgeryAsAnUnverifiedClaimAndTheVictimNamed) {
  auto snap = run_json(args({"ps", "--json"}), s_->nvml->env());
  const std::string init = "PID " + std::to_string(s_->v);
  EXPECT_EQ(row_of(snap, s_->a)["container"], kForgedContainer);
  EXPECT_EQ(row_of(snap, s_->a_keep)["container"], kForgedContainer);
  EXPECT_EQ(row_of(snap, s_->w)["container"],
            victim_container("docker names " + init + ", its ancestor, as the container's init"));
  EXPECT_EQ(row_of(snap, s_->w_keep)["container"],
            victim_container("it runs in the cgroup of " + init +
                             ", which docker names as the container's init"));

  auto table = run_gpureap(args({"ps", "--no-color"}), s_->nvml->env());
  ASSERT_EQ(table.exit_code, 0) << table.out << table.err;
  for (pid_t p : {s_->a, s_->a_keep}) {
    auto rows = rows_of(table.out, p);
    ASSERT_EQ(rows.size(), 1u) << table.out;
    EXPECT_NE(rows[0].find("unverified docker:" + kShort), std::string::npos) << rows[0];
    EXPECT_EQ(rows[0].find("bert-0"), std::string::npos) << rows[0];
  }
  auto rows = rows_of(table.out, s_->w);
  ASSERT_EQ(rows.size(), 1u) << table.out;
  EXPECT_NE(rows[0].find("research/bert-0"), std::string::npos) << rows[0];
}

TEST_F(ContainerClaims, MetricsChargeTheForgersMemoryToNoPod) {
  TempDir cfg;
  std::ofstream(cfg.file("config.toml"))
      << "interval = \"250ms\"\nper_process_metrics = true\nlocal_socket = \"\"\n";
  DaemonProcess d(args({"--config", cfg.file("config.toml")}), s_->nvml->env());
  ASSERT_GT(d.port(), 0) << d.log();
  ASSERT_TRUE(wait_until([&] { return d.metric("gpureap_container_memory_bytes{").has_value(); }))
      << d.log();
  auto body = d.get("/metrics").body;
  std::vector<std::string> containers, a_series;
  std::istringstream lines(body);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("gpureap_container_memory_bytes{", 0) == 0) containers.push_back(line);
    if (line.rfind("gpureap_process_memory_bytes{", 0) == 0 &&
        line.find("pid=\"" + std::to_string(s_->a) + "\"") != std::string::npos)
      a_series.push_back(line);
  }
  // Only W's 2 GiB is the pod's; A's 4 GiB is nobody's container.
  EXPECT_EQ(containers,
            std::vector<std::string>{
                "gpureap_container_memory_bytes{gpu=\"1\",uuid=\"GPU-0001\","
                "pci_bus_id=\"00000000:11:00.0\",vendor=\"nvidia\",container=\"" +
                kId +
                "\",container_name=\"trainer\",pod_name=\"bert-0\",pod_namespace=\"research\","
                "pod_uid=\"\"} 2147483648"})
      << body;
  ASSERT_EQ(a_series.size(), 1u) << body;
  EXPECT_NE(a_series[0].find("container=\"\",container_name=\"\",pod_name=\"\","
                             "pod_namespace=\"\",pod_uid=\"\"} 4294967296"),
            std::string::npos)
      << a_series[0];
}

TEST_F(ContainerClaims, DoctorStopsNoContainerForTheForgery) {
  auto doc =
      parse_output(run_gpureap(args({"doctor", "--json", "--settle", "0s"}), s_->nvml->env()));
  const std::string t_a = std::to_string(s_->t_a), t_v = std::to_string(s_->t_v);
  const std::set<pid_t> forger{s_->a, s_->a_keep, s_->t_a};
  std::map<std::string, json> ghosts;  // the no-such-process finding of each gone trainer
  size_t about_forger = 0;
  for (const auto& f : doc["findings"]) {
    const auto pids = f["pids"].get<std::vector<pid_t>>();
    if (f["code"] == "no-such-process" && !pids.empty()) ghosts[std::to_string(pids[0])] = f;
    if (std::none_of(pids.begin(), pids.end(), [&](pid_t p) { return forger.count(p) > 0; }))
      continue;
    ++about_forger;
    for (const auto& line : f["remedy"])
      for (const char* stop : {"docker stop", "podman stop", "crictl", "nerdctl", "kubectl"})
        EXPECT_EQ(line.get<std::string>().find(stop), std::string::npos) << f.dump(2);
  }
  EXPECT_GE(about_forger, 1u) << "the ghost, whose keeper is an orphan: "
                              << doc["findings"].dump(2);
  ASSERT_EQ(ghosts.count(t_a), 1u) << doc["findings"].dump(2);
  ASSERT_EQ(ghosts.count(t_v), 1u) << doc["findings"].dump(2);
  const std::string a_keep = std::to_string(s_->a_keep), w_keep = std::to_string(s_->w_keep);
  EXPECT_EQ(ghosts[t_a]["remedy"],
            json::array({"gpureap kill " + t_a + "   # ends its keeper (PID " + a_keep +
                         ") and waits for the memory to come back"}));
  EXPECT_EQ(ghosts[t_v]["remedy"],
            json::array(
                {"gpureap kill " + t_v + "   # ends its keeper (PID " + w_keep +
                     ") and waits for the memory to come back",
                 "docker stop " + kShort + "   # stops container trainer of pod research/bert-0"}));
  EXPECT_EQ(ghosts[t_v]["steps"][1]["kind"], "or") << ghosts[t_v].dump(2);
}

TEST_F(ContainerClaims, APolicyForTheVictimsContainerDoesNotMatchTheForgery) {
  TempDir cfg;
  std::ofstream(cfg.file("config.toml")) << "[[policy]]\nname = \"bert\"\ncontainer = "
                                            "\"research/bert-*\"\naction = \"notify\"\n"
                                            "[[policy]]\nname = \"by-id\"\ncontainer = \"" +
                                                kShort + "\"\naction = \"notify\"\n";
  auto j = run_json(args({"--json", "policy", "test", "--config", cfg.file("config.toml")}),
                    s_->nvml->env());
  ASSERT_EQ(j["policies"].size(), 2u) << j.dump(2);
  for (const auto& policy : j["policies"]) {
    SCOPED_TRACE(policy["name"].get<std::string>());
    for (pid_t p : {s_->w, s_->w_keep})
      EXPECT_EQ(entry_of(policy["processes"], p)["status"], "matches") << policy.dump(2);
    for (pid_t p : {s_->a, s_->a_keep}) {
      auto e = entry_of(policy["processes"], p);
      EXPECT_EQ(e["status"], "no-match") << policy.dump(2);
      EXPECT_EQ(e["checks"],
                json::array({{{"condition", "container"},
                              {"verdict", "fail"},
                              {"detail", "unverified docker:" + kShort + ": " + kForgedWhy}}}))
          << e.dump(2);
    }
  }
}

}  // namespace
}  // namespace gpureap::testing

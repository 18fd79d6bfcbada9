// A mixed machine, through the real binary: an NVIDIA GPU (the NVML test double) and an AMD
// GPU (a DRM fixture: sysfs, fd links, fdinfo, KFD) in one snapshot. Every view reads the same
// join: ps (JSON and text), doctor, and reset's refusal of a GPU it cannot reset.
#include <gtest/gtest.h>

#include "drm_machine.h"
#include "support.h"

namespace gpureap::testing {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

class MixedVendors : public ::testing::Test {
 protected:
  void SetUp() override {
    m_.write("dev/nvidia0", "");
    m_.write("dev/nvidiactl", "");
    m_.amd_gpu(0, 128, kAmd, 32 * GiB, 9 * GiB, "AMD Instinct MI210");
    m_.kfd_node(1, 4321, 0, 0x03);

    // An NVIDIA job (500), listed by NVML.
    m_.process(500, "cuda_job", 1, 500, 500);
    m_.open_fd(500, 3, "nvidia0", "");
    m_.open_fd(500, 4, "nvidiactl", "");

    // An AMD trainer (600) and its two DataLoader workers sharing its render client.
    m_.process(600, "trainer", 1, 600, 600);
    std::string client = DrmMachine::amdgpu_fdinfo(kAmd, 17, 4 * 1024 * 1024, 1024);
    m_.open_fd(600, 5, "dri/renderD128", client);
    for (pid_t w : {601, 602}) {
      m_.process(w, "pt_data_worker", 600, 600, 600);
      m_.open_fd(w, 5, "dri/renderD128", client);
    }
    // A ROCm leader (700) gone, its orphaned worker (701) keeping /dev/kfd: KFD lists 3 GiB.
    m_.kfd_process(700, 4321, 3 * GiB);
    m_.process(701, "rocm_worker", 1, 700, 700);
    m_.open_fd(701, 4, "kfd", "");

    nvml_.write({{"proc_root", m_.proc_root()},
                 {"gpus",
                  {{{"uuid", "GPU-0000"},
                    {"minor", 0},
                    {"total_bytes", 80 * GiB},
                    {"processes", {{{"pid", 500}, {"used_bytes", 6 * GiB}}}}}}}});
  }

  std::vector<std::string> roots(std::vector<std::string> args) const {
    args.insert(args.end(), {"--proc-root", m_.proc_root(), "--dev-root", m_.dev_root(),
                             "--sys-root", m_.sys_root()});
    return args;
  }

  DrmMachine m_;
  FakeNvml nvml_{nlohmann::json::object()};
};

TEST_F(MixedVendors, PsJsonHasBothVendorsGpusAndTheirHolders) {
  auto j = run_json(roots({"ps", "--json"}), nvml_.env());
  ASSERT_TRUE(j.contains("gpus")) << j.dump();
  ASSERT_EQ(j["gpus"].size(), 2u) << j["gpus"].dump(2);
  EXPECT_EQ(j["gpus"][0]["vendor"], "nvidia");
  EXPECT_EQ(j["gpus"][0]["index"], 0);
  EXPECT_EQ(j["gpus"][1]["vendor"], "amd");
  EXPECT_EQ(j["gpus"][1]["index"], 1);
  EXPECT_EQ(j["gpus"][1]["backend"], "amdgpu");
  EXPECT_EQ(j["gpus"][1]["key"], "amd:pci:" + kAmd);
  EXPECT_EQ(j["gpus"][1]["name"], "AMD Instinct MI210");
  EXPECT_EQ(j["gpus"][1]["memory"]["used_bytes"], 9 * GiB);
  EXPECT_EQ(j["gpus"][1]["memory"]["attributed_bytes"], 4 * GiB);
  EXPECT_EQ(j["gpus"][1]["memory"]["ghost_bytes"], 3 * GiB);
  EXPECT_EQ(j["gpus"][1]["memory"]["unattributed_bytes"], 2 * GiB);
  EXPECT_EQ(j["gpus"][1]["device_numbers"], (nlohmann::json{"226:0", "226:128", "510:0"}));

  // The backends: NVML and amdgpu answer, the Intel one has no GPU here.
  std::map<std::string, nlohmann::json> backends;
  for (const auto& b : j["backends"]) backends[b["name"]] = b;
  EXPECT_EQ(backends["nvml"]["available"], true);
  EXPECT_EQ(backends["amdgpu"]["available"], true);
  EXPECT_EQ(backends["amdgpu"]["kfd"], "yes");
  EXPECT_EQ(backends["intel"]["available"], false);
  EXPECT_EQ(backends["intel"]["error_code"], "no-device");

  auto nvidia_job = row_of(j, 500);
  ASSERT_FALSE(nvidia_job.is_null());
  EXPECT_EQ(nvidia_job["gpus"][0]["index"], 0);
  EXPECT_EQ(nvidia_job["gpus"][0]["used_bytes"], 6 * GiB);

  auto trainer = row_of(j, 600);
  ASSERT_FALSE(trainer.is_null());
  ASSERT_EQ(trainer["gpus"].size(), 1u);
  EXPECT_EQ(trainer["gpus"][0]["index"], 1);
  EXPECT_EQ(trainer["gpus"][0]["used_bytes"], 4 * GiB);
  EXPECT_EQ(trainer["gpus"][0]["shared_with"], (nlohmann::json{601, 602}));
  EXPECT_EQ(trainer["gpus"][0]["regions"][0]["name"], "vram");
  EXPECT_EQ(trainer["gpus"][0]["regions"][0]["resident_bytes"], 4 * GiB);
  EXPECT_EQ(trainer["gpus"][0]["regions"][1]["name"], "gtt");
  EXPECT_EQ(trainer["gpus"][0]["regions"][1]["resident_bytes"], 1 * kMiB);
  EXPECT_TRUE(trainer["anomalies"].empty());
  for (pid_t w : {601, 602}) {
    auto worker = row_of(j, w);
    ASSERT_FALSE(worker.is_null()) << w;
    EXPECT_EQ(worker["listed_by_driver"], false);
    EXPECT_TRUE(worker["anomalies"].empty()) << worker.dump();
    EXPECT_EQ(worker["shares_context_of"], nlohmann::json{600});
  }
  auto gone = row_of(j, 700);
  ASSERT_FALSE(gone.is_null());
  EXPECT_EQ(gone["in_proc"], false);
  EXPECT_EQ(gone["ghost"]["keepers"], nlohmann::json{701});
  auto keeper = row_of(j, 701);
  ASSERT_FALSE(keeper.is_null());
  EXPECT_EQ(keeper["keeps"], nlohmann::json{700});
  EXPECT_EQ(keeper["devices"][0]["kind"], "kfd");
  EXPECT_EQ(keeper["devices"][0]["device"], "510:0");
}

TEST_F(MixedVendors, PsTextSaysWhoSharesAClientAndNamesTheGhostsCommand) {
  auto r = run_gpureap(roots({"ps", "--no-color"}), nvml_.env());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("AMD Instinct MI210"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("PID 600 shares its GPU 1 memory with PID 601, 602"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("gpureap kill 700"), std::string::npos) << r.out;
  // The backend with no GPU here says nothing.
  EXPECT_EQ(r.out.find("INTEL"), std::string::npos) << r.out;
}

TEST_F(MixedVendors, DoctorExplainsTheAmdGhostAndLeavesTheHealthyJobsAlone) {
  auto r = run_gpureap(roots({"doctor", "--json", "--settle", "0s"}), nvml_.env());
  EXPECT_EQ(r.exit_code, 2) << r.err;  // the ghost is critical
  auto j = parse_output(r);
  ASSERT_TRUE(j.contains("findings")) << j.dump();
  bool ghost = false;
  for (const auto& f : j["findings"]) {
    for (const auto& pid : f.value("pids", nlohmann::json::array()))
      for (pid_t healthy : {500, 600, 601, 602})
        EXPECT_FALSE(pid == healthy && f["severity"] != "info") << f.dump();
    if (f["gpus"] == nlohmann::json{1} &&
        f.value("pids", nlohmann::json()).dump().find("700") != std::string::npos)
      ghost = true;
  }
  EXPECT_TRUE(ghost) << j["findings"].dump(2);
}

TEST_F(MixedVendors, ResetRefusesTheAmdGpuAndNamesAmdgpusOwnReset) {
  m_.remove("sys/class/kfd/kfd/proc/700");
  m_.remove("proc/701");
  for (pid_t p : {600, 601, 602}) m_.remove("proc/" + std::to_string(p));
  auto r = run_gpureap(roots({"reset", "--gpu", "1", "--yes"}), nvml_.env());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("amdgpu_gpu_recover"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("/sys/kernel/debug/dri/0/"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace gpureap::testing

namespace gpureap::testing {
namespace {

TEST_F(MixedVendors, PsTreeShowsTheWorkersUnderTheirTrainer) {
  auto r = run_gpureap(roots({"ps", "--tree", "--no-color"}), nvml_.env());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // The trainer is a root (init is left out, as in top); its workers are siblings below it.
  auto trainer = r.out.find("\n600 ");
  auto worker = r.out.find("\n├ 601");
  ASSERT_NE(trainer, std::string::npos) << r.out;
  ASSERT_NE(worker, std::string::npos) << r.out;
  EXPECT_LT(trainer, worker) << r.out;
  EXPECT_GT(r.out.find("\n└ 602"), worker) << r.out;
}

}  // namespace
}  // namespace gpureap::testing

// Doctor over host shared memory nothing uses: a remedy that removes only what a gone job left
// (a GPU job library's file, a file whose owner runs nothing, a segment made without a key), a
// note that checks everything else, and silence about the files of known services.
#include <gtest/gtest.h>

#include "backend/registry.h"
#include "doctor/diagnose.h"
#include "doctor/shm_names.h"
#include "snapshot_builders.h"

namespace gpureap::doctor {
namespace {

using namespace gpureap::testing;

std::vector<Finding> diagnose_ipc(procfs::IpcResidue ipc) {
  auto s = make_snapshot({proc(1, 0, 1)}, {});
  return diagnose({s, s, std::move(ipc), std::nullopt, nullptr});
}

const Finding* ipc_finding(const std::vector<Finding>& fs, FindingCode code) {
  for (const auto& f : fs)
    if (f.code == code) return &f;
  return nullptr;
}

std::vector<std::string> commands_of(const Finding* f) {
  std::vector<std::string> out;
  if (f)
    for (const auto& r : f->remedy) out.push_back(r.command);
  return out;
}

constexpr uid_t kRunsProcesses = 1001;  // runs processes
constexpr uid_t kRunsNothing = 1002;    // runs none
constexpr uid_t kPostgresUid = 114;

procfs::ShmFile shm_file(const std::string& name, uid_t uid, bool owner_runs) {
  return {"/dev/shm/" + name, 32 * MiB, uid, owner_runs};
}

TEST(DoctorIpcRules, NamesSayWhichLibraryOrServiceMadeAFile) {
  const ShmNames names(backend::builtin_backends());
  using K = ShmMaker::Kind;
  for (const char* job : {"torch_4242_2788394957", "torch_4242_2788394957_17", "psm_0a1b2c3d",
                          "sem.mp-k3_x9a0q", "nccl-Ab3xZ9", "cuda.shm.0.10a2.1",
                          "psm2_shm.10010000000a0b0c0d0", "psm3_shm.1001.0a0b:c0d.0"})
    EXPECT_EQ(names.maker(job).kind, K::JobLibrary) << job;
  EXPECT_EQ(names.maker("torch_4242_2788394957").who, "PyTorch");
  EXPECT_EQ(names.maker("nccl-Ab3xZ9").who, "NCCL");
  for (const char* service : {"libpod_lock", "libpod_rootless_lock_1001", "PostgreSQL.1804289383"})
    EXPECT_EQ(names.maker(service).kind, K::Service) << service;
  // A user's own names that merely begin alike are nobody's.
  for (const char* mine : {"torch_dataset.bin", "torch_4242", "psm_notes", "sem.mylock",
                           "sem.mp-toolongname", "nccl-cache", "libpod_lock.bak", "x\ntorch_1_2"})
    EXPECT_EQ(names.maker(mine).kind, K::Unknown) << mine;
}

// The whole plan: what is removed, and everything else left to a check.
TEST(DoctorIpcRules, OnlyWhatAGoneJobLeftIsRemoved) {
  procfs::IpcResidue ipc;
  ipc.segments.push_back({0, 65538, 64 * MiB, 111, 112, 0, kRunsProcesses});       // private
  ipc.segments.push_back({0x5eed, 65539, 16 * MiB, 111, 112, 0, kRunsProcesses});  // keyed
  ipc.files.push_back(shm_file("torch_4242_2788394957_0", kRunsProcesses, true));  // PyTorch's
  ipc.files.push_back(shm_file("sem.mp-k3_x9a0q", kRunsProcesses, true));  // multiprocessing's
  ipc.files.push_back(shm_file("nccl-Ab3xZ9", 0, true));                   // NCCL's, root's
  ipc.files.push_back(shm_file("leftover.bin", kRunsNothing, false));      // owner runs nothing
  ipc.files.push_back(shm_file("dataset.arrow", kRunsProcesses, true));    // staged on purpose
  ipc.files.push_back(shm_file("sem.mylock", kRunsProcesses, true));       // a named semaphore
  ipc.files.push_back(shm_file("libpod_lock", 0, true));                   // podman's locks
  ipc.files.push_back(
      shm_file("libpod_rootless_lock_1002", kRunsNothing, false));  // podman's, Bob's
  ipc.files.push_back(
      shm_file("PostgreSQL.1804289383", kPostgresUid, false));     // a stopped database
  ipc.files.push_back(shm_file("cache.db", kPostgresUid, false));  // a system account's
  auto fs = diagnose_ipc(ipc);
  const auto* left = ipc_finding(fs, FindingCode::IpcResidue);
  ASSERT_NE(left, nullptr);
  EXPECT_EQ(left->severity, Severity::Warning);
  EXPECT_EQ(commands_of(left),
            (std::vector<std::string>{"ipcrm -m 65538", "rm /dev/shm/torch_4242_2788394957_0",
                                      "rm /dev/shm/sem.mp-k3_x9a0q", "rm /dev/shm/nccl-Ab3xZ9",
                                      "rm /dev/shm/leftover.bin"}));
  EXPECT_EQ(left->memory_bytes, 64 * MiB + 4 * 32 * MiB);
  EXPECT_NE(left->evidence[1].find("is a PyTorch file, neither open nor mapped by any live "
                                   "process"),
            std::string::npos)
      << left->evidence[1];
  EXPECT_NE(left->evidence[4].find("belongs to uid 1002, who runs no process"), std::string::npos)
      << left->evidence[4];
  const auto* unused = ipc_finding(fs, FindingCode::IpcUnused);
  ASSERT_NE(unused, nullptr);
  EXPECT_EQ(unused->severity, Severity::Info);
  EXPECT_EQ(
      commands_of(unused),
      (std::vector<std::string>{"ipcs -m -i 65539", "fuser -v /dev/shm/dataset.arrow",
                                "fuser -v /dev/shm/sem.mylock", "fuser -v /dev/shm/cache.db"}));
  EXPECT_NE(unused->evidence[0].find("but it has a key (0x5eed)"), std::string::npos)
      << unused->evidence[0];
  // The services' files are named nowhere.
  for (const auto& f : fs)
    for (const auto& e : f.evidence) {
      EXPECT_EQ(e.find("libpod"), std::string::npos) << e;
      EXPECT_EQ(e.find("PostgreSQL"), std::string::npos) << e;
    }
}

// A process whose open files and maps could not be read may use any file: each finding with
// files says so, with the command that checks before a removal.
TEST(DoctorIpcRules, ProcessesNotInspectedAreNamedBeforeAnyRemoval) {
  procfs::IpcResidue ipc;
  ipc.files.push_back(shm_file("torch_4242_2788394957_0", kRunsProcesses, true));
  ipc.files.push_back(shm_file("dataset.arrow", kRunsProcesses, true));
  ipc.uninspected = {4250, 4251};
  auto fs = diagnose_ipc(ipc);
  for (auto code : {FindingCode::IpcResidue, FindingCode::IpcUnused}) {
    const auto* f = ipc_finding(fs, code);
    ASSERT_NE(f, nullptr) << to_string(code);
    EXPECT_EQ(f->evidence.back(),
              "the open files and maps of 2 process(es) could not be read (PID 4250): check with "
              "`fuser -v FILE` before removing a file");
    EXPECT_NE(f->evidence.front().find("neither open nor mapped by any process gpureap could "
                                       "inspect"),
              std::string::npos)
        << f->evidence.front();
  }
}

TEST(DoctorIpcRules, ASegmentNeverAttachedNamesNoLastUser) {
  procfs::IpcResidue ipc;
  ipc.segments.push_back({0, 65538, 64 * MiB, 111, 0, 0, 0});    // never attached
  ipc.segments.push_back({0, 65539, 64 * MiB, 111, 111, 0, 0});  // its creator last
  ipc.segments.push_back({0, 65540, 64 * MiB, 111, 112, 0, 0});  // another process last
  const auto fs = diagnose_ipc(ipc);
  const auto* f = ipc_finding(fs, FindingCode::IpcResidue);
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(f->evidence.size(), 3u);
  auto made = [](const std::string& id, const std::string& users) {
    return "System V shared memory segment " + id +
           " (64 MiB) was made without a key (private to its job), has no attached process, and " +
           users;
  };
  EXPECT_EQ(f->evidence[0], made("65538", "its creator 111 is gone"));
  EXPECT_EQ(f->evidence[1], made("65539", "its creator 111 is gone"));
  EXPECT_EQ(f->evidence[2], made("65540", "its creator 111 and its last user 112 are gone"));
}

}  // namespace
}  // namespace gpureap::doctor

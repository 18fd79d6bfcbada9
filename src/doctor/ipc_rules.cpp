// Host memory a killed job left behind: System V segments and files in /dev/shm. A remedy that
// removes one is given only for what a gone job left (doctor/shm_names.h says why a name alone
// decides nothing); anything else nobody uses now is a note with the commands that check it.
#include <fmt/format.h>

#include "backend/registry.h"
#include "doctor/diagnose.h"
#include "doctor/evidence.h"
#include "doctor/shm_names.h"
#include "text/escape.h"

namespace gpureap::doctor {
namespace {

// The first uid of a person's account (Debian's and Fedora's login.defs); system accounts run
// services, whose files are kept while the service is stopped. systemd-logind's RemoveIPC
// removes a person's IPC objects when their last session ends, and never a system account's.
constexpr uid_t kFirstPersonUid = 1000;

std::string file_name(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

StepKind then_after(const std::vector<RemedyStep>& remedy) {
  return remedy.empty() ? StepKind::Run : StepKind::Then;
}

struct Sorted {
  Finding left{FindingCode::IpcResidue, Severity::Warning};  // what a gone job left: removed
  Finding unused{FindingCode::IpcUnused, Severity::Info};    // nobody's now, maybe on purpose
  bool left_files = false, unused_files = false;
};

void sort_segment(const procfs::SysvShmSegment& seg, Sorted& out) {
  // A last user of 0: no process ever attached the segment.
  const std::string users = seg.last_pid > 0 && seg.last_pid != seg.creator_pid
                                ? fmt::format("its creator {} and its last user {} are gone",
                                              seg.creator_pid, seg.last_pid)
                                : fmt::format("its creator {} is gone", seg.creator_pid);
  if (seg.key != 0) {
    // A key is how a program finds its segment again: one kept on purpose has one.
    auto& f = out.unused;
    f.memory_bytes += seg.size_bytes;
    f.evidence.push_back(fmt::format(
        "System V shared memory segment {} ({}) has no attached process and {}, but it has a key "
        "({:#x}): a program can attach it again",
        seg.shmid, bytes_text(seg.size_bytes), users, static_cast<unsigned long long>(seg.key)));
    f.remedy.push_back({then_after(f.remedy), "ipcs -m -i " + std::to_string(seg.shmid),
                        "shows who made it; remove it only when nobody needs it"});
    return;
  }
  auto& f = out.left;
  f.memory_bytes += seg.size_bytes;
  f.evidence.push_back(fmt::format(
      "System V shared memory segment {} ({}) was made without a key (private to its job), has "
      "no attached process, and {}",
      seg.shmid, bytes_text(seg.size_bytes), users));
  f.remedy.push_back({then_after(f.remedy), "ipcrm -m " + std::to_string(seg.shmid),
                      "removes segment " + std::to_string(seg.shmid)});
}

void sort_file(const procfs::ShmFile& file, const ShmNames& names, bool all_inspected,
               Sorted& out) {
  const ShmMaker maker = names.maker(file_name(file.path));
  if (maker.kind == ShmMaker::Kind::Service) return;  // its service keeps it: never residue
  const bool owner_gone = !file.owner_runs && file.uid >= kFirstPersonUid;
  const std::string unused = all_inspected
                                 ? "neither open nor mapped by any live process"
                                 : "neither open nor mapped by any process gpureap could inspect";
  if (maker.kind == ShmMaker::Kind::JobLibrary || owner_gone) {
    auto& f = out.left;
    f.memory_bytes += file.size_bytes;
    f.evidence.push_back(
        maker.kind == ShmMaker::Kind::JobLibrary
            ? fmt::format("{} ({}) is a {} file, {}", file.path, bytes_text(file.size_bytes),
                          maker.who, unused)
            : fmt::format("{} ({}) belongs to uid {}, who runs no process, and is {}", file.path,
                          bytes_text(file.size_bytes), file.uid, unused));
    f.remedy.push_back(
        {then_after(f.remedy), "rm " + text::shell_quote(file.path), "removes the file"});
    out.left_files = true;
    return;
  }
  const char* why = file.owner_runs
                        ? "; its owner runs processes, and no GPU job library names its files so"
                        : "; its owner is a system account, whose service may keep it";
  auto& f = out.unused;
  f.memory_bytes += file.size_bytes;
  f.evidence.push_back(fmt::format("{} ({}, uid {}) is {}{}", file.path,
                                   bytes_text(file.size_bytes), file.uid, unused, why));
  f.remedy.push_back({then_after(f.remedy), "fuser -v " + text::shell_quote(file.path),
                      "lists who uses it (as does lsof); remove it only when nobody needs it"});
  out.unused_files = true;
}

}  // namespace

void ipc_rules(const DoctorInput& in, std::vector<Finding>& out) {
  if (in.ipc.segments.empty() && in.ipc.files.empty()) return;
  Sorted sorted;
  for (const auto& seg : in.ipc.segments) sort_segment(seg, sorted);
  const ShmNames names(in.backends ? *in.backends : backend::builtin_backends());
  const bool all_inspected = in.ipc.uninspected.empty();
  for (const auto& file : in.ipc.files) sort_file(file, names, all_inspected, sorted);
  // A process whose open files and maps could not be read may use any of the files.
  auto finish = [&](Finding& f, bool files, std::string summary, std::string explanation) {
    if (f.evidence.empty()) return;
    if (files && !all_inspected)
      f.evidence.push_back(fmt::format(
          "the open files and maps of {} process(es) could not be read (PID {}): check with "
          "`fuser -v FILE` before removing a file",
          in.ipc.uninspected.size(), in.ipc.uninspected.front()));
    f.summary = std::move(summary);
    f.explanation = std::move(explanation);
    out.push_back(std::move(f));
  };
  finish(sorted.left, sorted.left_files,
         fmt::format("{} of shared memory left behind by jobs that ended",
                     bytes_text(sorted.left.memory_bytes)),
         "Shared memory left behind by killed jobs: files that GPU job libraries make (PyTorch's "
         "DataLoader workers, NCCL, Python multiprocessing) or whose owner has no process left, "
         "and segments made without a key, that nothing uses. It holds host memory until "
         "removed.");
  finish(sorted.unused, sorted.unused_files,
         fmt::format("{} of shared memory nothing uses now, perhaps kept on purpose",
                     bytes_text(sorted.unused.memory_bytes)),
         "Nothing uses this shared memory now, but gpureap cannot tell that a job left it: a file "
         "in /dev/shm may be a dataset staged on purpose or a semaphore a program keeps, and a "
         "segment with a key is found again by it. Check who uses each before removing it.");
}

}  // namespace gpureap::doctor

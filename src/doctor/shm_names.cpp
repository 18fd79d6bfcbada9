#include "doctor/shm_names.h"

namespace gpureap::doctor {
namespace {

struct NameShape {
  ShmMaker::Kind kind;
  const char* who;
  const char* name;  // the whole name, an ECMAScript regular expression
};

// Each shape is the one its maker's source writes, so a user's file that merely starts alike
// ("torch_dataset.bin") is no library's.
const NameShape kNeutral[] = {
    // at::NewProcessWideShmHandle and the CUDA IPC reference counters: "/torch_<pid>_<random>"
    // (and "_<counter>").
    {ShmMaker::Kind::JobLibrary, "PyTorch", R"(torch_\d+_\d+(_\d+)?)"},
    // multiprocessing.shared_memory: "/psm_" and 8 hex digits (secrets.token_hex(4)).
    {ShmMaker::Kind::JobLibrary, "Python multiprocessing", "psm_[0-9a-f]{8}"},
    // multiprocessing's named semaphores: "/mp-" and 8 of [a-z0-9_]; glibc adds "sem.".
    {ShmMaker::Kind::JobLibrary, "Python multiprocessing", "sem\\.mp-[a-z0-9_]{8}"},
    // Omni-Path PSM2 and PSM3 (MPI's transports): "/psm2_shm.<uid><epid><n>", "/psm3_shm.…".
    {ShmMaker::Kind::JobLibrary, "PSM2", "psm2_shm\\.[0-9a-f]+"},
    {ShmMaker::Kind::JobLibrary, "PSM3", R"(psm3_shm\.[0-9a-zA-Z.:_-]+)"},
    // podman's lock table (its SHM lock manager): deleting it breaks container locking until
    // `podman system renumber`.
    {ShmMaker::Kind::Service, "podman", "libpod_lock"},
    {ShmMaker::Kind::Service, "podman", R"(libpod_rootless_lock_\d+)"},
    // PostgreSQL's dynamic shared memory (dynamic_shared_memory_type = posix).
    {ShmMaker::Kind::Service, "PostgreSQL", R"(PostgreSQL\.\d+)"},
};

}  // namespace

ShmNames::ShmNames(const backend::Registry& registry) {
  for (const auto& s : kNeutral) shapes_.push_back({std::regex(s.name), {s.kind, s.who}});
  for (const auto& entry : registry)
    for (const auto& kind : entry.shm_files)
      shapes_.push_back({std::regex(kind.name), {ShmMaker::Kind::JobLibrary, kind.maker}});
}

ShmMaker ShmNames::maker(std::string_view name) const {
  for (const auto& [shape, maker] : shapes_)
    if (std::regex_match(name.begin(), name.end(), shape)) return maker;
  return {};
}

}  // namespace gpureap::doctor

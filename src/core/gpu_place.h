#pragma once
// Where a process runs on a GPU split into instances (GpuInstance), in the one notation every
// view and every `--gpu` option uses: "N/G", GPU N's GPU instance G (an instance's
// compute instances share their GPU instance's memory, so the GPU instance is the place).
#include <optional>
#include <string>
#include <vector>

#include "core/gpu.h"
#include "core/process.h"
#include "core/result.h"
#include "core/snapshot.h"

namespace gpureap::core {

// "0/3".
std::string instance_place(unsigned gpu_index, unsigned gpu_instance_id);
// "0" for a whole GPU, "0/3" for its GPU instance 3.
std::string gpu_place_text(unsigned gpu_index, std::optional<unsigned> gpu_instance_id);
// The instance's kind and profile: "<kind> 1g.10gb", or "<kind>" where the driver gave no profile.
std::string instance_words(const GpuInstance& instance);
// "<kind> 1g.10gb (GI 3, CI 0)", or "<kind> (GI 3)" where the driver gave no profile or CI.
std::string instance_label(const GpuInstance& instance);
// The GPU's instances of GPU instance `gi` (one per compute instance), first one or null.
const GpuInstance* find_instance(const Gpu& gpu, unsigned gpu_instance_id);
// The GPU instance ids of the GPU's instances, each once, in the driver's order.
std::vector<unsigned> gpu_instance_ids(const Gpu& gpu);

// The GPU instances of `gpu` a process is granted through the capability files it holds.
std::vector<unsigned> held_instances(const HostProcess& process, const Gpu& gpu);

// The GPU instance a row runs in on GPU `gpu_index`: where the driver lists it; for an unlisted
// holder, the one instance whose files it holds (none when it holds several, or none).
std::optional<unsigned> row_instance(const Snapshot& snapshot, const ProcessRow& row,
                                     unsigned gpu_index);

// A resolved GPU, GPU instance or compute instance of a snapshot: where `--gpu`, a policy's
// `gpu` and an instance's UUID point.
struct GpuPlace {
  unsigned index = 0;
  std::optional<unsigned> gpu_instance;
  // Only with `gpu_instance`: one compute instance of it (named by its UUID, or "N/G/C").
  std::optional<unsigned> compute_instance;
  bool operator==(const GpuPlace&) const = default;
};
// "0", "0/3", "0/3/1".
std::string gpu_place_text(const GpuPlace& place);

// Whether a row is in `place`: the one rule every selector, filter, policy and view follows. A
// process is where the memory it keeps or is listed with is: its own listing there; the listing
// of a gone PID it keeps; the listing of a live process it shares an open GPU file with (its
// job). A process whose memory is listed elsewhere merely sees this GPU (CUDA opens every
// visible GPU's file). Only a holder with no listed memory at all is placed by the files it
// holds: the GPU's, the GPU instance's capability files, or every capability file of the
// compute instance. Its memory may be a context nobody lists, or it may block a reset.
bool in_place(const Snapshot& snapshot, const ProcessRow& row, const GpuPlace& place);
// The GPUs (whole) a row is on by in_place, ascending.
std::vector<unsigned> gpus_of(const Snapshot& snapshot, const ProcessRow& row);

// How a GPU is written on the command line, for help texts and errors.
inline constexpr const char* kGpuRefWords =
    "write a GPU's index (0), a GPU instance as GPU/instance (0/3), a compute instance as "
    "GPU/instance/compute instance (0/3/1), or a GPU's or an instance's UUID";

// A GPU as a user names it: "N", "N/G", "N/G/C", or a GPU's or an instance's UUID (any text that
// does not start with a digit).
struct GpuRef {
  std::optional<unsigned> index;
  std::optional<unsigned> gpu_instance;
  std::optional<unsigned> compute_instance;
  std::optional<std::string> uuid;
};
std::optional<GpuRef> parse_gpu_ref(const std::string& text);
// --gpu's value: fails naming it ("--gpu 0/x names no GPU", as typed: the views escape it)
// with kGpuRefWords.
Result<GpuRef> parse_gpu_option(const std::string& text);

// The instance with this UUID (its compute instance), or GPU N's instance G (or compute
// instance G/C), checked against the GPU's instances;
// fails saying why when the snapshot has no such instance. A bare index is returned as it is
// (core::check_gpu_index checks it).
Result<GpuPlace> resolve_gpu_ref(const Snapshot& snapshot, const GpuRef& ref);

}  // namespace gpureap::core

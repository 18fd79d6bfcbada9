#include "core/gpu_place.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace gpureap::core {
namespace {

std::optional<unsigned> place_number(std::string_view text) {
  unsigned value = 0;
  if (text.empty() || text.size() > 9) return std::nullopt;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::string id_list(const std::vector<unsigned>& ids) {
  std::string out;
  for (unsigned id : ids) out += (out.empty() ? "" : ", ") + std::to_string(id);
  return out;
}

}  // namespace

std::string instance_place(unsigned gpu_index, unsigned gpu_instance_id) {
  return std::to_string(gpu_index) + "/" + std::to_string(gpu_instance_id);
}

std::string gpu_place_text(unsigned gpu_index, std::optional<unsigned> gpu_instance_id) {
  return gpu_instance_id ? instance_place(gpu_index, *gpu_instance_id) : std::to_string(gpu_index);
}

std::string instance_words(const GpuInstance& instance) {
  std::string words = instance.kind.empty() ? "instance" : instance.kind;
  if (instance.profile) words += " " + *instance.profile;
  return words;
}

std::string instance_label(const GpuInstance& instance) {
  std::string label = instance_words(instance);
  label += " (GI " + std::to_string(instance.gpu_instance_id);
  if (instance.compute_instance_id)
    label += ", CI " + std::to_string(*instance.compute_instance_id);
  return label + ")";
}

const GpuInstance* find_instance(const Gpu& gpu, unsigned gpu_instance_id) {
  for (const auto& instance : gpu.instances)
    if (instance.gpu_instance_id == gpu_instance_id) return &instance;
  return nullptr;
}

std::vector<unsigned> gpu_instance_ids(const Gpu& gpu) {
  std::vector<unsigned> ids;
  for (const auto& instance : gpu.instances)
    if (std::find(ids.begin(), ids.end(), instance.gpu_instance_id) == ids.end())
      ids.push_back(instance.gpu_instance_id);
  return ids;
}

std::vector<unsigned> held_instances(const HostProcess& process, const Gpu& gpu) {
  std::vector<unsigned> ids;
  for (const auto& instance : gpu.instances) {
    const bool held =
        std::any_of(process.devices.begin(), process.devices.end(), [&](const DeviceHold& hold) {
          return hold.device &&
                 std::find(instance.device_numbers.begin(), instance.device_numbers.end(),
                           *hold.device) != instance.device_numbers.end();
        });
    if (held && std::find(ids.begin(), ids.end(), instance.gpu_instance_id) == ids.end())
      ids.push_back(instance.gpu_instance_id);
  }
  return ids;
}

std::optional<unsigned> row_instance(const Snapshot& snapshot, const ProcessRow& row,
                                     unsigned gpu_index) {
  for (const auto& use : row.gpus)
    if (use.index == gpu_index && use.gpu_instance_id) return use.gpu_instance_id;
  const Gpu* gpu = snapshot.gpu(gpu_index);
  if (!gpu || gpu->instances.empty() || !row.process) return std::nullopt;
  auto held = held_instances(*row.process, *gpu);
  if (held.size() == 1) return held.front();
  return std::nullopt;
}

bool in_gpu_instance(const Snapshot& snapshot, const ProcessRow& row, unsigned gpu_index,
                     unsigned gpu_instance_id) {
  auto listed_in = [&](const ProcessRow* r) {
    return r && std::any_of(r->gpus.begin(), r->gpus.end(), [&](const GpuUse& u) {
             return u.index == gpu_index && u.gpu_instance_id == gpu_instance_id;
           });
  };
  if (listed_in(&row)) return true;
  for (pid_t pid : row.keeps)
    if (listed_in(snapshot.row(pid))) return true;
  for (pid_t pid : row.shares_context_of)
    if (listed_in(snapshot.row(pid))) return true;
  // Listed on this GPU elsewhere: it is where the driver says, whatever else it holds.
  if (std::any_of(row.gpus.begin(), row.gpus.end(),
                  [&](const GpuUse& u) { return u.index == gpu_index; }))
    return false;
  const Gpu* gpu = snapshot.gpu(gpu_index);
  if (!gpu || !row.process) return false;
  auto held = held_instances(*row.process, *gpu);
  return std::find(held.begin(), held.end(), gpu_instance_id) != held.end();
}

std::optional<GpuRef> parse_gpu_ref(const std::string& text) {
  GpuRef ref;
  if (!text.empty() && !std::isdigit(static_cast<unsigned char>(text.front()))) {
    if (text.size() <= 4 || text.size() > 96) return std::nullopt;
    ref.uuid = text;
    return ref;
  }
  const auto slash = text.find('/');
  ref.index = place_number(std::string_view(text).substr(0, slash));
  if (!ref.index) return std::nullopt;
  if (slash != std::string::npos) {
    ref.gpu_instance = place_number(std::string_view(text).substr(slash + 1));
    if (!ref.gpu_instance) return std::nullopt;
  }
  return ref;
}

Result<GpuRef> parse_gpu_option(const std::string& text) {
  if (auto ref = parse_gpu_ref(text)) return *ref;
  return Error{"--gpu " + text + " names no GPU", kGpuRefWords};
}

Result<GpuPlace> resolve_gpu_ref(const Snapshot& snapshot, const GpuRef& ref) {
  auto none = [](std::string why) {
    return Error{std::move(why), "`gpureap ps` shows every GPU and instance"};
  };
  if (ref.uuid) {
    for (const auto& gpu : snapshot.drivers.gpus) {
      if (gpu.uuid == ref.uuid) return GpuPlace{gpu.index, std::nullopt};
      for (const auto& instance : gpu.instances)
        if (instance.uuid == ref.uuid) return GpuPlace{gpu.index, instance.gpu_instance_id};
    }
    return none("no GPU or GPU instance has the UUID " + *ref.uuid +
                " (`gpureap ps --json` lists every GPU's and instance's UUID)");
  }
  GpuPlace place{ref.index.value_or(0), ref.gpu_instance};
  if (!ref.gpu_instance) return place;
  const Gpu* gpu = snapshot.gpu(place.index);
  if (!gpu) return place;  // the index's own check says what is wrong
  const auto ids = gpu_instance_ids(*gpu);
  if (ids.empty())
    return none("GPU " + std::to_string(place.index) + " is not split into instances: name it as " +
                std::to_string(place.index));
  if (std::find(ids.begin(), ids.end(), *ref.gpu_instance) == ids.end())
    return none("GPU " + std::to_string(place.index) + " has no GPU instance " +
                std::to_string(*ref.gpu_instance) + " (its instances: " + id_list(ids) +
                ", written " + instance_place(place.index, ids.front()) + ")");
  return place;
}

}  // namespace gpureap::core

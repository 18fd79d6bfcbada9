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

std::string gpu_place_text(const GpuPlace& place) {
  std::string text = gpu_place_text(place.index, place.gpu_instance);
  if (place.gpu_instance && place.compute_instance)
    text += "/" + std::to_string(*place.compute_instance);
  return text;
}

namespace {

bool listed_in(const ProcessRow* row, const GpuPlace& place) {
  return row && std::any_of(row->gpus.begin(), row->gpus.end(), [&](const GpuUse& u) {
           return u.index == place.index &&
                  (!place.gpu_instance || u.gpu_instance_id == place.gpu_instance) &&
                  (!place.compute_instance || u.compute_instance_id == place.compute_instance);
         });
}

bool holds_every(const HostProcess& process, const std::vector<dev_t>& numbers) {
  return !numbers.empty() && std::all_of(numbers.begin(), numbers.end(), [&](dev_t number) {
    return std::any_of(process.devices.begin(), process.devices.end(),
                       [&](const DeviceHold& hold) { return hold.device == number; });
  });
}

// An unlisted holder with no listed memory: where the files it holds reach. Only where the
// driver told the GPU's device numbers: gpureap never guesses a GPU's file.
bool holds_place(const Snapshot& snapshot, const HostProcess& process, const GpuPlace& place) {
  const Gpu* gpu = snapshot.gpu(place.index);
  if (!gpu || gpu->device_numbers.empty() || !process.holds_gpu(*gpu)) return false;
  if (!place.gpu_instance) return true;
  if (place.compute_instance) {
    for (const auto& instance : gpu->instances)
      if (instance.gpu_instance_id == *place.gpu_instance &&
          instance.compute_instance_id == place.compute_instance)
        return holds_every(process, instance.device_numbers);
    return false;
  }
  auto held = held_instances(process, *gpu);
  return std::find(held.begin(), held.end(), *place.gpu_instance) != held.end();
}

}  // namespace

bool in_place(const Snapshot& snapshot, const ProcessRow& row, const GpuPlace& place) {
  if (listed_in(&row, place)) return true;
  for (const auto* job : {&row.keeps, &row.shares_context_of})
    for (pid_t pid : *job)
      if (listed_in(snapshot.row(pid), place)) return true;
  // Its memory is listed elsewhere (its own, a kept one's, its job's): it is there.
  if (!row.gpus.empty() || !row.keeps.empty() || !row.shares_context_of.empty()) return false;
  return row.process && !row.process->stat.is_zombie() &&
         holds_place(snapshot, *row.process, place);
}

std::vector<unsigned> gpus_of(const Snapshot& snapshot, const ProcessRow& row) {
  std::vector<unsigned> out;
  for (const auto& gpu : snapshot.drivers.gpus)
    if (in_place(snapshot, row, {gpu.index})) out.push_back(gpu.index);
  std::sort(out.begin(), out.end());
  return out;
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
    const auto rest = std::string_view(text).substr(slash + 1);
    const auto second = rest.find('/');
    ref.gpu_instance = place_number(rest.substr(0, second));
    if (!ref.gpu_instance) return std::nullopt;
    if (second != std::string_view::npos) {
      ref.compute_instance = place_number(rest.substr(second + 1));
      if (!ref.compute_instance) return std::nullopt;
    }
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
        if (instance.uuid == ref.uuid)
          return GpuPlace{gpu.index, instance.gpu_instance_id, instance.compute_instance_id};
    }
    return none("no GPU or GPU instance has the UUID " + *ref.uuid +
                " (`gpureap ps --json` lists every GPU's and instance's UUID)");
  }
  GpuPlace place{ref.index.value_or(0), ref.gpu_instance, ref.compute_instance};
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
  if (place.compute_instance &&
      std::none_of(gpu->instances.begin(), gpu->instances.end(), [&](const GpuInstance& i) {
        return i.gpu_instance_id == *place.gpu_instance &&
               i.compute_instance_id == place.compute_instance;
      }))
    return none("GPU instance " + instance_place(place.index, *place.gpu_instance) +
                " has no compute instance " + std::to_string(*place.compute_instance));
  return place;
}

}  // namespace gpureap::core

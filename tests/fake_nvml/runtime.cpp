#include "runtime.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

// Real NVML hands out opaque pointers; the double's point into this array.
struct nvmlDevice_st {
  unsigned index;
  int mig_slot;  // -1: the GPU's own handle
};

namespace fake_nvml {
namespace {

constexpr unsigned kMaxDevices = 64;
constexpr unsigned kMaxMigSlots = 16;

std::mutex g_mutex;
int g_init_count = 0;
// The stand-in for /dev/nvidiactl, which NVML holds open while initialised: a character device
// every machine has, so the double needs no driver. Guarded by g_mutex.
constexpr const char* kControlDevice = "/dev/null";
int g_control_fd = -1;

void close_control_locked() {
  if (g_control_fd >= 0) ::close(g_control_fd);
  g_control_fd = -1;
}
// Calls begun in this session by export, and a signal at each (Scenario::meet). Guarded by
// g_mutex.
std::map<std::string, unsigned long> g_calls_begun;
std::condition_variable g_call_begun;
// How long a call of a meeting waits for the others: a caller that makes them one after the
// other never makes them meet, and the call then fails instead of hanging the test.
constexpr auto kMeetingWait = std::chrono::seconds(10);

struct Loaded {
  std::string path;
  struct timespec mtime {};
  off_t size = 0;
  ino_t inode = 0;
  Scenario scenario;
};
std::unique_ptr<Loaded> g_loaded;

nvmlDevice_st g_devices[kMaxDevices];
nvmlDevice_st* devices() {
  return g_devices;
}
nvmlDevice_st g_mig_devices[kMaxDevices * kMaxMigSlots];

bool in_table(nvmlDevice_t device, nvmlDevice_st* table, unsigned size) {
  return device != nullptr && device >= table && device < table + size;
}

void complain(const std::string& text) {
  std::fprintf(stderr, "fake NVML: %s\n", text.c_str());
}

bool same_file(const Loaded& loaded, const std::string& path, const struct stat& st) {
  return loaded.path == path && loaded.inode == st.st_ino && loaded.size == st.st_size &&
         loaded.mtime.tv_sec == st.st_mtim.tv_sec && loaded.mtime.tv_nsec == st.st_mtim.tv_nsec;
}

// Caller holds g_mutex.
const Scenario* scenario_locked(bool force_reload) {
  const char* path = std::getenv("FAKE_NVML_SCENARIO");
  if (path == nullptr || *path == '\0') {
    complain("FAKE_NVML_SCENARIO is not set; it must name a scenario JSON file");
    return nullptr;
  }
  struct stat st {};
  if (::stat(path, &st) != 0) {
    complain(std::string("cannot stat scenario ") + path + ": " + std::strerror(errno));
    return nullptr;
  }
  if (!force_reload && g_loaded && same_file(*g_loaded, path, st)) return &g_loaded->scenario;
  try {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    auto loaded = std::make_unique<Loaded>();
    loaded->scenario = parse_scenario(text.str(), path);
    loaded->path = path;
    loaded->mtime = st.st_mtim;
    loaded->size = st.st_size;
    loaded->inode = st.st_ino;
    g_loaded = std::move(loaded);
  } catch (const std::exception& e) {
    complain(std::string("cannot read scenario ") + path + ": " + e.what());
    return nullptr;
  }
  return &g_loaded->scenario;
}

// block_call names either the exact export or its base name without _vN.
bool names_function(const std::string& wanted, const char* function) {
  if (wanted.empty()) return false;
  std::string name = function;
  if (wanted == name) return true;
  const auto suffix = name.rfind("_v");
  return suffix != std::string::npos && wanted == name.substr(0, suffix);
}

// FAKE_NVML_CALL_COUNTS names a file that holds, after every call, how many times this
// process called each function: {"nvmlDeviceGetName": 2, ...}. Tests read it to check which
// calls gpureap makes; benchmarks to compare two programs' calls. Caller holds g_mutex.
std::map<std::string, unsigned long> g_call_counts;
void count_call_locked(const char* function) {
  const char* path = std::getenv("FAKE_NVML_CALL_COUNTS");
  if (path == nullptr || *path == '\0') return;
  ++g_call_counts[function];
  const std::string temp = std::string(path) + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(temp);
    out << '{';
    const char* comma = "";
    for (const auto& [name, count] : g_call_counts) {
      out << comma << '"' << name << "\": " << count;
      comma = ", ";
    }
    out << "}\n";
  }
  if (std::rename(temp.c_str(), path) != 0) complain(std::string("cannot write ") + path);
}

// The latency the scenario gives `function`: its own entry, else "*"'s, else none.
std::chrono::microseconds latency_of(const Scenario& scenario, const char* function) {
  std::optional<unsigned> any, own;
  for (const auto& [name, us] : scenario.call_latency_us) {
    if (name == "*")
      any = us;
    else if (names_function(name, function))
      own = us;
  }
  return std::chrono::microseconds(own.value_or(any.value_or(0)));
}

// Waits `latency` as a driver's ioctl does, without the timer slack a sleep adds (~50 us): a
// sleep for the bulk, then a spin to the deadline.
void wait_out(std::chrono::microseconds latency) {
  if (latency.count() <= 0) return;
  const auto deadline = std::chrono::steady_clock::now() + latency;
  constexpr auto kSlack = std::chrono::microseconds(200);
  if (latency > kSlack) std::this_thread::sleep_for(latency - kSlack);
  while (std::chrono::steady_clock::now() < deadline) {
  }
}

void block_if_named(const char* function) {
  bool block = false;
  unsigned slow_ms = 0;
  std::chrono::microseconds latency{0};
  {
    std::lock_guard lock(g_mutex);
    ++g_calls_begun[function];
    g_call_begun.notify_all();
    count_call_locked(function);
    const Scenario* scenario = scenario_locked(false);
    block = scenario != nullptr && names_function(scenario->block_call, function);
    if (scenario != nullptr) {
      for (const auto& [name, ms] : scenario->slow_calls)
        if (names_function(name, function)) slow_ms = ms;
      latency = latency_of(*scenario, function);
    }
  }
  // A slow driver: the call answers, late. The lock is not held meanwhile either.
  if (slow_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(slow_ms));
  wait_out(latency);
  // Like a wedged driver: never returns. The lock is not held, so other calls still work.
  while (block) ::sleep(3600);
}

}  // namespace

nvmlReturn_t init(const char* function) {
  block_if_named(function);
  std::lock_guard lock(g_mutex);
  // NVML opens the driver's control device first and keeps it open until the last
  // nvmlShutdown. An open that fails is its documented NVML_ERROR_NO_PERMISSION when the device
  // refuses this user, else NVML_ERROR_DRIVER_NOT_LOADED: no descriptor left (EMFILE) included.
  if (g_init_count == 0 && g_control_fd < 0) {
    g_control_fd = ::open(kControlDevice, O_RDWR | O_CLOEXEC);
    if (g_control_fd < 0)
      return errno == EACCES || errno == EPERM ? NVML_ERROR_NO_PERMISSION
                                               : NVML_ERROR_DRIVER_NOT_LOADED;
  }
  const Scenario* scenario = scenario_locked(true);
  nvmlReturn_t rc = scenario == nullptr ? NVML_ERROR_UNKNOWN : scenario->init_error;
  if (rc != NVML_SUCCESS) {
    if (g_init_count == 0) close_control_locked();
    return rc;
  }
  if (g_init_count == 0) g_calls_begun.clear();  // a meeting counts the calls of one session
  ++g_init_count;
  return NVML_SUCCESS;
}

nvmlReturn_t shutdown(const char* function) {
  block_if_named(function);
  std::lock_guard lock(g_mutex);
  if (g_init_count == 0) return NVML_ERROR_UNINITIALIZED;
  if (--g_init_count == 0) close_control_locked();
  return NVML_SUCCESS;
}

namespace {

// False when `function` is one of the scenario's meeting (Scenario::meet) and the others did not
// come: within kMeetingWait, not every function of it had its count of calls begun.
bool meeting_held(const char* function) {
  std::unique_lock lock(g_mutex);
  const Scenario* scenario = scenario_locked(false);
  if (scenario == nullptr) return true;
  const std::map<std::string, unsigned> meet = scenario->meet;
  if (!std::any_of(meet.begin(), meet.end(),
                   [function](const auto& m) { return names_function(m.first, function); }))
    return true;
  auto begun = [](const std::string& wanted) {
    unsigned long total = 0;
    for (const auto& [name, count] : g_calls_begun)
      if (names_function(wanted, name.c_str())) total += count;
    return total;
  };
  return g_call_begun.wait_for(lock, kMeetingWait, [&] {
    return std::all_of(meet.begin(), meet.end(),
                       [&](const auto& m) { return begun(m.first) >= m.second; });
  });
}

}  // namespace

nvmlReturn_t call(const char* function, const std::function<nvmlReturn_t(const Scenario&)>& body) {
  block_if_named(function);
  if (!meeting_held(function)) return NVML_ERROR_TIMEOUT;
  std::lock_guard lock(g_mutex);
  if (g_init_count == 0) return NVML_ERROR_UNINITIALIZED;
  try {
    const Scenario* scenario = scenario_locked(false);
    if (scenario == nullptr) return NVML_ERROR_UNKNOWN;
    return body(*scenario);
  } catch (const std::exception& e) {
    complain(std::string(function) + ": " + e.what());
    return NVML_ERROR_UNKNOWN;
  }
}

nvmlReturn_t call_any_device(const char* function, nvmlDevice_t device,
                             const std::function<nvmlReturn_t(const Scenario&, unsigned, const Gpu&,
                                                              const MigDevice*)>& body) {
  return call(function, [&](const Scenario& scenario) {
    const bool mig = in_table(device, g_mig_devices, kMaxDevices * kMaxMigSlots);
    if (!mig && !in_table(device, devices(), kMaxDevices)) return NVML_ERROR_INVALID_ARGUMENT;
    const unsigned index = device->index;
    if (index >= scenario.gpus.size()) return NVML_ERROR_INVALID_ARGUMENT;
    const Gpu& gpu = scenario.gpus[index];
    if (gpu.error != NVML_SUCCESS) return gpu.error;
    if (!mig) return body(scenario, index, gpu, nullptr);
    for (const MigDevice& m : gpu.mig_devices)
      if (static_cast<int>(m.slot) == device->mig_slot) return body(scenario, index, gpu, &m);
    return NVML_ERROR_INVALID_ARGUMENT;  // the scenario no longer has it
  });
}

nvmlReturn_t call_device(
    const char* function, nvmlDevice_t device,
    const std::function<nvmlReturn_t(const Scenario&, unsigned, const Gpu&)>& body) {
  return call_any_device(
      function, device,
      [&](const Scenario& scenario, unsigned index, const Gpu& gpu, const MigDevice* mig) {
        if (mig != nullptr) return NVML_ERROR_NOT_SUPPORTED;
        return body(scenario, index, gpu);
      });
}

nvmlDevice_t mig_handle_for(unsigned index, unsigned slot) {
  if (index >= kMaxDevices || slot >= kMaxMigSlots) return nullptr;
  nvmlDevice_st* device = g_mig_devices + index * kMaxMigSlots + slot;
  device->index = index;
  device->mig_slot = static_cast<int>(slot);
  return device;
}

nvmlDevice_t handle_for(unsigned index) {
  if (index >= kMaxDevices) return nullptr;
  nvmlDevice_st* device = devices() + index;
  device->index = index;
  device->mig_slot = -1;
  return device;
}

nvmlReturn_t copy_string(const std::string& text, char* out, unsigned length) {
  if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (text.size() + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(out, text.c_str(), text.size() + 1);
  return NVML_SUCCESS;
}

}  // namespace fake_nvml

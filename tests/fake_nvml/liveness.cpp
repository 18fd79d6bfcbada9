#include "liveness.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>

namespace fake_nvml {
namespace {

using nlohmann::json;

// CLOCK_MONOTONIC is system-wide, so times written by one process compare with another's.
std::int64_t now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

// The state file, locked for the duration of one listing so concurrent runs agree on who
// saw a context die first.
class StateFile {
 public:
  explicit StateFile(const std::string& path) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) return;
    ::flock(fd_, LOCK_EX);
    std::string text;
    char chunk[4096];
    ssize_t n;
    while ((n = ::read(fd_, chunk, sizeof chunk)) > 0) text.append(chunk, static_cast<size_t>(n));
    state_ = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!state_.is_object()) state_ = json::object();
    if (!state_.contains("first_dead_ms") || !state_["first_dead_ms"].is_object()) {
      state_["first_dead_ms"] = json::object();
    }
  }
  StateFile(const StateFile&) = delete;
  StateFile& operator=(const StateFile&) = delete;

  ~StateFile() {
    if (fd_ < 0) return;
    if (dirty_) {
      const std::string text = state_.dump(2) + "\n";
      if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, text.data(), text.size(), 0) < 0) {
        perror("fake NVML: cannot write the state file");
      }
    }
    ::close(fd_);  // releases the lock
  }

  std::optional<std::int64_t> first_dead(const std::string& key) const {
    const json& seen = state_["first_dead_ms"];
    auto it = seen.find(key);
    if (it == seen.end() || !it->is_number_integer()) return std::nullopt;
    return it->get<std::int64_t>();
  }

  void set_first_dead(const std::string& key, std::int64_t when) {
    state_["first_dead_ms"][key] = when;
    dirty_ = true;
  }

 private:
  int fd_ = -1;
  // Also what a state file that cannot be opened (a scenario folder the user cannot write)
  // leaves: first_dead() must find the object, or it reads past the end of the map.
  json state_ = {{"first_dead_ms", json::object()}};
  bool dirty_ = false;
};

}  // namespace

bool process_alive(const std::string& proc_root, unsigned pid) {
  std::ifstream stat(proc_root + "/" + std::to_string(pid) + "/stat");
  if (!stat) return false;
  const std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  // The command name may contain ") ", so the state is the field after the last ')'.
  const auto paren = text.rfind(')');
  if (paren == std::string::npos || paren + 2 >= text.size()) return false;
  const char state = text[paren + 2];
  return state != 'Z' && state != 'X' && state != 'x';
}

std::vector<const Process*> listed_processes(const Scenario& scenario, unsigned gpu_index) {
  std::vector<const Process*> listed;
  const Gpu& gpu = scenario.gpus.at(gpu_index);
  const bool any_mortal = std::any_of(gpu.processes.begin(), gpu.processes.end(),
                                      [](const Process& p) { return !p.leaked; });
  if (!any_mortal) {
    for (const Process& process : gpu.processes) listed.push_back(&process);
    return listed;
  }
  StateFile state(scenario.path + ".state");
  const std::int64_t now = now_ms();
  for (const Process& process : gpu.processes) {
    if (process.leaked) {
      listed.push_back(&process);
      continue;
    }
    const std::string key = std::to_string(gpu_index) + "/" + std::to_string(process.pid);
    // Once seen dead the context is being torn down for good, even if a holder PID is later
    // reused by an unrelated process.
    std::optional<std::int64_t> died = state.first_dead(key);
    if (!died) {
      const bool held =
          std::any_of(process.holders.begin(), process.holders.end(),
                      [&](unsigned pid) { return process_alive(scenario.proc_root, pid); });
      if (held) {
        listed.push_back(&process);
        continue;
      }
      died = now;
      state.set_first_dead(key, now);
    }
    if (now - *died < static_cast<std::int64_t>(process.release_delay_ms)) {
      listed.push_back(&process);
    }
  }
  return listed;
}

}  // namespace fake_nvml

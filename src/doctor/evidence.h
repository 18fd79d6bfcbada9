#pragma once
// Sentences and commands the rules share, so every finding names processes the same way.
#include <optional>
#include <string>
#include <vector>

#include "core/snapshot.h"

namespace gpureap::doctor {

// "PID 4250 (loader-worker)"
std::string process_label(const core::HostProcess& p);
// "PID 4250 (loader-worker) holds /dev/dri/renderD128 on fd 7; its parent is 1"
std::string holds_sentence(const core::Snapshot& s, const core::HostProcess& p);
// "docker stop ID   # stops container NAME" and friends, when the process verifiably runs in a
// container.
std::optional<std::string> container_stop_command(const core::HostProcess& p);
// "8.0 GiB"; "unknown" when the driver did not say.
std::string bytes_text(std::optional<uint64_t> bytes);
std::string pid_list(const std::vector<pid_t>& pids);

}  // namespace gpureap::doctor

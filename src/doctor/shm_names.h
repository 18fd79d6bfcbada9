#pragma once
// What the name of a file in /dev/shm says of who made it. A name is anyone's to choose, so it
// decides nothing alone: it lets doctor call a file residue only together with what the kernel
// shows (nothing has it open or mapped), and it keeps the files of known services out of
// residue whatever else holds.
#include <regex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backend/registry.h"

namespace gpureap::doctor {

struct ShmMaker {
  enum class Kind {
    JobLibrary,  // a GPU job's library, whose files outlive a killed job (PyTorch, NCCL)
    Service,     // a service that keeps its file on purpose (podman's lock table, PostgreSQL)
    Unknown,
  };
  Kind kind = Kind::Unknown;
  std::string who;  // "PyTorch", "podman"
};

// The name shapes of the job libraries of every vendor's registry entry (ShmFileKind), and of
// the vendor-neutral ones and services listed here, compiled once.
class ShmNames {
 public:
  explicit ShmNames(const backend::Registry& registry);
  // The maker of the file named `name` (no directory).
  ShmMaker maker(std::string_view name) const;

 private:
  std::vector<std::pair<std::regex, ShmMaker>> shapes_;
};

}  // namespace gpureap::doctor

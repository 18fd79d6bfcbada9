#pragma once
// A ghost: a PID the driver lists that is gone from /proc (or only a zombie there), and who
// keeps its memory alive.
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace gpureap::core {

struct Ghost {
  pid_t pid = 0;
  std::vector<unsigned> gpus;  // where the driver lists it
  uint64_t bytes = 0;          // its known listed memory
  // Live processes whose open device files keep its context: they share no open file with a
  // live process the driver lists on that GPU.
  std::vector<pid_t> keepers;
  // Live processes the driver lists themselves that descend from it or share its group: they
  // own a context of their own and may also hold files inherited from it.
  std::vector<pid_t> listed_keepers;
  // Other live holders of its GPUs' files that share no open file with a listed process but
  // are no kin of it, when kin keepers exist: they may keep it too, only the user can judge.
  std::vector<pid_t> other_holders;
  std::vector<std::string> open_files;  // the open file descriptions that keep it (ids)
  // The keepers were found by comparing open files (kcmp), not guessed from kinship.
  bool exact = false;
  // Nothing alive holds it and every process could be inspected: a leaked context.
  bool leaked = false;
  // Live servers that run other processes' GPU work (DriverProcess::serves_clients) listed on
  // a GPU where the driver lists it as their client (kind ServerClient): its context lives inside a
  // server, which keeps it until the server ends the client's work, not any inherited file.
  std::vector<pid_t> servers;

  bool kept() const { return !keepers.empty() || !listed_keepers.empty(); }
  bool kept_by_server() const { return !servers.empty(); }
};

}  // namespace gpureap::core

#pragma once
// A vendor that is not DRM, as a folder under src/backend (and its one registry line) would add
// it: "Example" GPUs reached through /dev/examplegpu<N>, character devices of a driver that
// registers its own major under the name "examplegpu" in /proc/devices and gives each node's
// MAJ:MIN in sysfs (class/examplegpu/examplegpu<N>/dev). Its driver lists processes; its words
// (a status tool, a reset command) are its own. Nothing outside this folder and the one line
// that adds its entry to a registry knows of it: the test proves the device catalogue, the
// join, doctor, `ps` and the metrics take a vendor as data.
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/registry.h"

namespace gpureap::testing {

struct ExampleListing {
  pid_t pid = 0;
  uint64_t used_bytes = 0;
};

// The registry entry. `node`: the device number of /dev/examplegpu0 (what the driver says GPU 0
// is reached through); `listings`: the processes its driver lists on GPU 0.
backend::BackendEntry example_entry(dev_t node, std::vector<ExampleListing> listings);

}  // namespace gpureap::testing

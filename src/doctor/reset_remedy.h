#pragma once
// The command that resets one GPU, as its vendor's driver offers one: the remedy for memory
// only a reset frees. Each backend's registry entry words its reset (VendorWords::reset); a
// vendor that offers none a user should reach for before a reboot says "reboot".
#include <string>
#include <vector>

#include "core/kernel_event.h"
#include "core/snapshot.h"

namespace gpureap::backend {
struct BackendEntry;
}

namespace gpureap::doctor {

// `gpu` is the GPU's global index; the snapshot tells its backend, `backends` (null: the
// built-in ones) its words. Without a known GPU, gpureap's own `reset --gpu N`.
std::string reset_command(const core::Snapshot& s, unsigned gpu,
                          const std::vector<backend::BackendEntry>* backends = nullptr);
// The same, unless the kernel log shows an error on that GPU that no reset recovers (a GPU
// fallen off the bus, an uncontained ECC error): then "reboot", with why.
std::string reset_command(const core::Snapshot& s, unsigned gpu, const core::KernelLog* kernel,
                          const std::vector<backend::BackendEntry>* backends = nullptr);

}  // namespace gpureap::doctor

#pragma once
// A DRM GPU's process list, as a driver's own list would be: one entry per PID with its memory,
// every client counted once. A client shared by several processes (a file inherited across
// fork) is listed on the lowest PID that holds it; the others are named its sharers. KFD's
// list (AMD compute) is joined in: a PID it lists is listed, even once gone from /proc.
#include <optional>
#include <vector>

#include "backend/drm/client_table.h"
#include "backend/drm/kfd.h"
#include "backend/drm/sysfs_devices.h"
#include "core/gpu.h"

namespace gpureap::backend::drm {

// The client is one of this device's: its drm-pdev names it, or, without one, its node is one
// of the device's.
bool client_of(const ObservedClient& client, const DrmDevice& device);

// Bytes of the device's own memory (vram, local0) the client's buffers hold, resident where
// the driver says so; for a GPU with no memory of its own (an integrated one), every region.
// Empty when the driver prints no memory figure.
std::optional<uint64_t> client_used_bytes(const DrmClient& client);

std::vector<core::DriverProcess> gpu_processes(const DrmDevice& device,
                                               const std::vector<ObservedClient>& clients,
                                               const KfdReading& kfd,
                                               std::optional<unsigned> kfd_gpu_id);

}  // namespace gpureap::backend::drm

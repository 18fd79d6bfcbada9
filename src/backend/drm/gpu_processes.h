#pragma once
// A DRM GPU's process list, as a driver's own list would be: one entry per PID with its memory,
// every client counted once. A client shared by several processes (a file inherited across
// fork) is listed on the lowest PID that holds it; the others are named its sharers. KFD's
// list (AMD compute) is joined in: a PID it lists is listed, even once gone from /proc.
//
// Shared buffers (drm-shared-<region>: a dma-buf between a compositor and an application, or
// between a job's processes; a buffer with more than one handle) are in the resident figure of
// every client that holds them, so summing clients would count them once per client. A GPU's
// shared memory is counted once: in the used memory of the client that reports the most of it
// (the lowest PID on a tie); every other client's used memory is its private part (resident
// less shared). Every buffer a client shares is in the figure of each client holding it, so the
// GPU's shared memory is at least the largest figure: counting that one keeps the attributed
// sum within the memory the GPU uses. Each process's regions keep what its clients printed,
// shared_bytes included (the JSON's per-GPU "regions").
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

// The part of client_used_bytes in buffers shared with other clients (drm-shared-<region> of
// the same regions, each at most the region's figure). Empty when the driver prints no
// drm-shared key for them (amdgpu before 6.9 and every driver before 6.5 print none).
std::optional<uint64_t> client_shared_bytes(const DrmClient& client);

std::vector<core::DriverProcess> gpu_processes(const DrmDevice& device,
                                               const std::vector<ObservedClient>& clients,
                                               const KfdReading& kfd,
                                               std::optional<unsigned> kfd_gpu_id);

}  // namespace gpureap::backend::drm

#pragma once
// What a DRM driver says of one open DRM file in /proc/PID/fdinfo/FD (kernel
// Documentation/gpu/drm-usage-stats.rst): the driver, the device, the client (one per open file
// description, shared by dup'd and forked fds) and its memory and engine use. The keys are the
// same for every driver (amdgpu, i915, xe, msm, panfrost, ...): parsed generically. amdgpu's
// own keys from before that standard (kernels 5.14 to 5.18: "pdev:", "vram mem: N kB", "gfx0:
// 0.5%") are read too; ARCHITECTURE.md lists which kernel prints which keys.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gpureap::backend::drm {

// One memory region's figures for one client, in bytes (a value without a unit is bytes; KiB
// and MiB are converted). A figure the driver did not print stays empty.
struct RegionMemory {
  std::string name;  // amdgpu: vram, gtt, cpu; i915: local0, system0; xe: vram0, gtt
  std::optional<uint64_t> total;
  std::optional<uint64_t> shared;
  std::optional<uint64_t> resident;  // drm-resident-<r>, else amdgpu's deprecated drm-memory-<r>
  std::optional<uint64_t> purgeable;
  std::optional<uint64_t> active;
};

struct EngineUse {
  std::string name;                      // gfx, compute, render, rcs, vcs, ...
  std::optional<uint64_t> busy_ns;       // drm-engine-<e>: <uint> ns
  std::optional<uint64_t> capacity;      // drm-engine-capacity-<e>
  std::optional<uint64_t> cycles;        // drm-cycles-<e> (xe)
  std::optional<uint64_t> total_cycles;  // drm-total-cycles-<e> (xe)
  // amdgpu before drm-usage-stats ("gfx0:\t12.5%"), in hundredths of a percent. The kernel
  // printed the hundredths unpadded ("%d.%d%%" of perc/100, perc%100): "0.5%" is 5, 0.05%.
  std::optional<uint64_t> percent_hundredths;
};

struct DrmClient {
  std::string driver;                 // drm-driver: mandatory
  std::optional<std::string> pdev;    // drm-pdev: the PCI address, "0000:03:00.0"
  std::optional<uint64_t> client_id;  // drm-client-id: unique per device when pdev is present
  std::optional<uint64_t> pasid;      // amdgpu's "pasid:" (its VM's address space), every format
  // The file is in amdgpu's format from before drm-usage-stats (no drm- key): "pdev:" for the
  // device, "vram mem:", "gtt mem:", "cpu mem:" in kB (KiB) for resident memory, engines as
  // percentages. No client id: the open file is the client.
  bool amdgpu_legacy = false;
  std::vector<RegionMemory> regions;  // in the order the file first names them
  std::vector<EngineUse> engines;     // in the order the file first names them

  const RegionMemory* region(std::string_view name) const;
};

// The number that names a client (one struct drm_file, shared by dup'd and forked fds) on its
// device, where the file prints one: drm-client-id; else amdgpu's pasid, the address space of
// the client's own GPU virtual memory, which amdgpu makes per open file in every format (before
// 5.19 it prints no drm-client-id). Empty: only the open file description can tell.
struct ClientNumber {
  std::string_view kind;  // "" for drm-client-id, "pasid:" for amdgpu's
  uint64_t id = 0;
};
std::optional<ClientNumber> client_number(const DrmClient& client);

// Parses the text of one fdinfo file. Fails, saying which line and why, when there is no
// drm-driver line (not a DRM file, or a file reused for something else) or when a value of a
// key gpureap reads is malformed (not a number, an unknown unit, too large for 64 bits once
// converted). Other keys, drm- or not, are ignored. A key printed twice keeps its later value
// (a driver prints each once). drm-memory-<r> is amdgpu's older name for resident: it counts
// only where the file has no drm-resident-<r>, whichever line comes first. The error names the
// line number and the key; the file's text is quoted shortened and with control bytes masked.
// amdgpu's legacy keys count only in a file with no drm-driver line (where drm-driver names the
// driver, "pdev:" and "vram mem:" are ignored); a legacy file needs "pdev:" and one "... mem:"
// line. Its memory lines rank below drm-resident-<r> and drm-memory-<r> of the same region.
core::Result<DrmClient> parse_fdinfo(std::string_view text);

// The text is a DRM file's usage stats in a form parse_fdinfo reads: a drm-driver line, or
// amdgpu's legacy "pdev:" with "vram mem:". Other fdinfo (a driver or kernel that prints none)
// is a holder the backend knows nothing more of, not a malformed file.
bool has_usage_stats(std::string_view text);

// The region is the device's own memory, not system memory that the GPU maps. The rule is the
// name's prefix, as drivers number their regions: "vram" (amdgpu vram, xe vram0, vram1),
// "local" (i915 local0) or "lmem" are device-local; anything else is not: gtt, cpu, system0,
// memory, and also i915's stolen-local0 (firmware-reserved, not what a client allocates).
bool is_device_local(std::string_view region);

}  // namespace gpureap::backend::drm

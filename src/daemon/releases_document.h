#pragma once
// The final closes of GPU files the holder tracker kept, as JSON: /api/v1/releases and
// /api/v1/history serve them over HTTP, the local socket to `gpureap kill`.
#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/snapshot.h"
#include "daemon/holder_tracker.h"
#include "history/history.h"
#include "history/history_document.h"

namespace gpureap::daemon {

inline constexpr const char* kReleasesSchema = "gpureap.releases/v1";

// The GPUs of `drivers` whose device numbers include the character device at `path`: one for a
// GPU's own node, each GPU of a vendor for a node they share, none for the driver's control file
// or a path that is no character device now.
std::vector<unsigned> gpus_reached(const std::string& path, const core::DriverReading& drivers);

// The releases since `since`, oldest first; none without a tracker. `gpus`: the GPUs of
// `drivers` the file reaches, by its device number (a GPU's own node: one; a node every GPU of a
// vendor shares: each of them; the driver's control file: none, as for a file no GPU names
// now); unknown without `drivers`.
std::vector<history::Release> releases(const HolderTracker* tracker,
                                       std::chrono::system_clock::time_point since = {},
                                       const core::DriverReading* drivers = nullptr);

// gpureap.releases/v1: every release kept. Without events (the kernel refused them, or
// holder_events = false) the list is empty and "tracking" is "scans".
nlohmann::json releases_document(const HolderTracker* tracker);

// gpureap.history/v1 since `since` (of one GPU or all), with the releases over the same span:
// /api/v1/history, and the local socket's "history" for `gpureap report`.
// `now`: the latest snapshot, which names the host and the GPUs each release's file reaches.
nlohmann::json history_document(const history::History& history, const core::Snapshot& now,
                                std::chrono::system_clock::time_point since,
                                std::optional<unsigned> gpu, const HolderTracker* tracker);

}  // namespace gpureap::daemon

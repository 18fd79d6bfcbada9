#pragma once
// The final closes of GPU files the holder tracker kept, as JSON: /api/v1/releases and
// /api/v1/history serve them over HTTP, the local socket to `gpureap kill`.
#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "daemon/holder_tracker.h"
#include "history/history.h"

namespace gpureap::daemon {

inline constexpr const char* kReleasesSchema = "gpureap.releases/v1";

// The releases since `since`, oldest first: [{"path","pid","at"}]; none without a tracker.
nlohmann::json releases_json(const HolderTracker* tracker,
                             std::chrono::system_clock::time_point since = {});

// gpureap.releases/v1: every release kept. Without events (the kernel refused them, or
// holder_events = false) the list is empty and "tracking" is "scans".
nlohmann::json releases_document(const HolderTracker* tracker);

// gpureap.history/v1 since `since` (of one GPU or all), with the releases over the same span:
// /api/v1/history, and the local socket's "history" for `gpureap report`.
nlohmann::json history_document(const history::History& history, const std::string& hostname,
                                std::chrono::system_clock::time_point since,
                                std::optional<unsigned> gpu, const HolderTracker* tracker);

}  // namespace gpureap::daemon

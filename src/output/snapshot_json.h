#pragma once
// The `gpureap.snapshot/v1` JSON document. Stable: later versions add fields, never rename.
#include <nlohmann/json.hpp>

#include "core/snapshot.h"

namespace gpureap::output {

inline constexpr const char* kSnapshotSchema = "gpureap.snapshot/v1";

nlohmann::json snapshot_to_json(const core::Snapshot& snapshot);
nlohmann::json row_to_json(const core::Snapshot& snapshot, const core::ProcessRow& row);
nlohmann::json gpu_to_json(const core::Snapshot& snapshot, const core::Gpu& gpu);

// Serialises any document gpureap prints: invalid UTF-8 from untrusted text is replaced,
// never a crash.
std::string dump_json(const nlohmann::json& doc, int indent = 2);

}  // namespace gpureap::output

#pragma once
// The `gpureap.snapshot/v1` JSON document. Stable: later versions add fields, never rename.
#include <nlohmann/json.hpp>

#include "core/snapshot.h"

namespace gpureap::output {

inline constexpr const char* kSnapshotSchema = "gpureap.snapshot/v1";

nlohmann::json snapshot_to_json(const core::Snapshot& snapshot);
// The same document as text, as dump_json(snapshot_to_json(snapshot), indent) writes it, with
// `source` (where the view came from) as one more key, but written straight from the values:
// no tree of an allocation per key. What the daemon serves for every sample and `ps --json`
// prints.
std::string snapshot_text(const core::Snapshot& snapshot, int indent = 2,
                          const nlohmann::json* source = nullptr);
nlohmann::json row_to_json(const core::Snapshot& snapshot, const core::ProcessRow& row);
nlohmann::json gpu_to_json(const core::Snapshot& snapshot, const core::Gpu& gpu);

// Serialises any document gpureap prints: invalid UTF-8 from untrusted text is replaced,
// never a crash.
std::string dump_json(const nlohmann::json& doc, int indent = 2);

}  // namespace gpureap::output

#pragma once
// The wire form of the evidence doctor examines (doctor::Evidence), for what the daemon holds
// and a local client cannot read as well itself: its latest snapshot and one taken --settle
// before it (their inputs as snapshot_wire.h carries them, with the holders' ends the daemon's
// tracker saw and when each listed PID was first listed), the IPC residue of its latest check,
// the GPU errors its kernel log follower collected, and the tail of the work server's log. Like
// the snapshot wire it is lossless and private to one build: another version is refused.
//
//   {"evidence": V, "last": <snapshot wire>, "first": <snapshot wire> | null (the same as last),
//    "ipc": <procfs::IpcResidue> | null, "kernel": <core::KernelLog> | null,
//    "work_server_log": [bytes]}
//
// V is kEvidenceWireVersion. The IPC residue and the kernel log are written and read by their
// descriptions (output/wire_fields.h) as the snapshot wire's structs are: the same keys (the
// fields' names), byte strings, strictness and errors. The blocked tasks of D-state holders
// are not carried: the daemon reads none, and the command reads them itself
// (collect::read_blocked_tasks), as on its own samples.
#include <nlohmann/json.hpp>

#include "core/result.h"
#include "doctor/examine.h"
#include "output/wire_tape.h"

namespace gpureap::output {

// Changes whenever a field is added, removed or changes meaning (the snapshots inside carry
// kSnapshotWireVersion of their own).
inline constexpr int kEvidenceWireVersion = 3;  // 3: keys are the fields' names

nlohmann::json evidence_to_wire(const doctor::Evidence& evidence);
// The same as one compact JSON text.
std::string evidence_to_wire_text(const doctor::Evidence& evidence);
// `first` is `last` itself when the document's is null. The document as read from its text
// (output/wire_tape.h), or already parsed.
core::Result<doctor::Evidence> evidence_from_wire(const wire::Value& wire);
core::Result<doctor::Evidence> evidence_from_wire(const nlohmann::json& wire);

}  // namespace gpureap::output

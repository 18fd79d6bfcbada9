#pragma once
// The wire form of a Snapshot's inputs: what the daemon sends a local client (`gpureap top`)
// so that the client rebuilds exactly the daemon's core::Snapshot. Unlike the public
// `gpureap.snapshot/v1` document (snapshot_json.h), it is lossless and private to one build:
// it carries the two views the join reads (core::DriverReading, core::ProcView) with every
// field, the hostname and the timestamp, and not what the join derives (rows, ghosts, its
// warnings): the decoder calls core::join, so those are computed by the same code as the
// daemon's.
//
// The document: {"wire": V, "timestamp": N, "hostname": S, "drivers": {...}, "proc": {...}},
// V being kSnapshotWireVersion and N nanoseconds since the epoch. Inside, each struct is an
// object whose keys are the names its description gives its fields (output/wire_fields.h: the
// fields' own names): those descriptions are this document's documentation, and the one codec
// (output/wire_codec.h) writes and reads every struct by them. Every field is present: an empty
// optional is null, never an absent key. Integers are JSON integers of the field's own type
// (uint64 sizes up to 2^64-1, pid_t and other signed fields negative too); a double is a
// number, or "nan", "inf", "-inf"; enums are their names (text/enum_names.h); a list is an
// array, a pair (a backend's or GPU's details) is [first, second], a map is an array of
// [key, value] pairs in key order; a char (the state letter) is a string of one byte.
//
// Byte strings. Every std::string (process names, paths, command lines, what a driver says)
// is untrusted bytes. One that is valid UTF-8 is a JSON string; any other is {"hex": "..."}
// with two lowercase hex digits per byte. So any bytes round-trip exactly, and the document
// itself is always valid UTF-8 (dump_json never has to replace anything in it).
//
// Decoding is strict: a missing, mistyped or out-of-range field, an unknown field, an unknown
// enum name, a map's key given twice, processes out of pid order or a "wire" other than
// kSnapshotWireVersion is an error naming the field's path
// (`proc.processes[3].stat.state: not a string`). Nothing throws out of these functions.
//
// A field added to a struct the document carries stops the build at its description until it
// has its line there; with that line it is encoded, decoded and round-trip tested
// (tests/unit/test_wire_codec.cpp fills every described field), and kSnapshotWireVersion must
// be raised.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/result.h"
#include "core/snapshot.h"
#include "output/wire_tape.h"

namespace gpureap::output {

// Changes whenever a field is added, removed or changes meaning: an older or newer peer's
// document is refused, never half-read.
inline constexpr int kSnapshotWireVersion = 18;  // 2: container and pod names; 3: verified
// containers; 4: exited parents; 5: driver_device_files (by backend); 6: GPU instances and
// servers of other processes' work; 7: when each listed PID was first seen listed;
// 8: the holders' ends the daemon saw; 9: distributed jobs' rank labels; 10: the ranks the
// daemon saw end, and the wait status of an end the events saw; 11: one codec by the
// structs' descriptions (keys are the fields' names; maps are [key, value] pairs); 12: whether
// a rank's end is dated by its exit event or bounded by a view, the scan's failures, and the
// thread whose own fd table holds a hold; 13: a process whose main thread has exited while
// another runs has that thread's flags (not exiting) and says its leader exited; 14: what
// the scan and a backend's load ran short of (descriptors, the system's files, memory); 15: a
// GPU's display driver's nodes (display_device_numbers); 16: a zombie's wait status; 17: the
// process under each listed number when its listing was first seen; 18: the PID namespace

nlohmann::json snapshot_inputs_to_wire(const core::Snapshot& snapshot);
// The inputs decoded and joined again: core::join(proc, drivers, hostname, timestamp). The
// document as read from its text (output/wire_tape.h), or already parsed.
core::Result<core::Snapshot> snapshot_from_wire(const wire::Value& wire);
core::Result<core::Snapshot> snapshot_from_wire(const nlohmann::json& wire);

// The same as text: one compact JSON document, and its parse (a text that is not JSON, e.g.
// cut short, is an error too).
std::string snapshot_inputs_to_wire_text(const core::Snapshot& snapshot);
// ... written at the end of `out` (a document that carries snapshots, evidence_wire.h).
void write_snapshot_inputs(std::string& out, const core::Snapshot& snapshot);
core::Result<core::Snapshot> snapshot_from_wire_text(std::string_view text);

// One byte string's wire value written as JSON text at the end of `out`, and the bytes of the
// "hex" form's digits (empty: not two lowercase hex digits per byte).
void write_bytes(std::string& out, std::string_view bytes);
std::optional<std::string> bytes_from_hex(std::string_view hex);

}  // namespace gpureap::output

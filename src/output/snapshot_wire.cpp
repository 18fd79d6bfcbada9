// Both halves of the snapshot wire (snapshot_wire.h). The structs inside are encoded and decoded
// by their descriptions (output/wire_fields.h) through the one codec (output/wire_codec.h); here
// is only what the document adds around them: its version, the inputs a Snapshot is joined
// from, and the order of the processes that the join relies on.
#include "output/snapshot_wire.h"

#include "output/wire_codec.h"
#include "output/wire_fields.h"

namespace gpureap::output {
namespace {

using nlohmann::json;
using wire::decode;

core::Snapshot snapshot(const wire::Value& v) {
  wire::Object o(v, "");
  wire::expect_version(o, "wire", kSnapshotWireVersion);
  auto timestamp = decode<std::chrono::system_clock::time_point>(o.at("timestamp"), "timestamp");
  auto hostname = decode<std::string>(o.at("hostname"), "hostname");
  auto drivers = decode<core::DriverReading>(o.at("drivers"), "drivers");
  auto proc = decode<core::ProcView>(o.at("proc"), "proc");
  o.finish();
  // The join and every lookup binary-search the processes by pid, as the collector sorts them.
  for (size_t i = 1; i < proc.processes.size(); ++i)
    if (proc.processes[i].stat.pid <= proc.processes[i - 1].stat.pid)
      wire::fail(wire::item_path("proc.processes", i) + ".stat.pid",
                 "not above the previous process's pid");
  return core::join(std::move(proc), std::move(drivers), std::move(hostname), timestamp);
}

}  // namespace

// The inputs are timestamp, hostname, drivers and proc; the join derives the other fields.
static_assert(core::field_count<core::Snapshot>() == 8);
void write_snapshot_inputs(std::string& out, const core::Snapshot& s) {
  out += '{';
  wire::write_member(out, "wire", kSnapshotWireVersion);
  wire::write_member(out, "timestamp", s.timestamp);
  wire::write_member(out, "hostname", s.hostname);
  wire::write_member(out, "drivers", s.drivers);
  wire::write_member(out, "proc", s.proc);
  out += '}';
}

std::string snapshot_inputs_to_wire_text(const core::Snapshot& snapshot) {
  std::string out;
  write_snapshot_inputs(out, snapshot);
  return out;
}

json snapshot_inputs_to_wire(const core::Snapshot& snapshot) {
  return json::parse(snapshot_inputs_to_wire_text(snapshot));
}

core::Result<core::Snapshot> snapshot_from_wire(const wire::Value& wire) {
  return wire::decoded("the snapshot's wire document is invalid", [&] { return snapshot(wire); });
}

core::Result<core::Snapshot> snapshot_from_wire(const json& wire) {
  return wire::decoded("the snapshot's wire document is invalid",
                       [&] { return snapshot(wire::Tape::of(wire).root()); });
}

core::Result<core::Snapshot> snapshot_from_wire_text(std::string_view text) {
  auto tape = wire::Tape::read(text);
  if (!tape)
    return core::Error{"the snapshot's wire document is invalid: not a JSON document (cut short?)",
                       ""};
  return snapshot_from_wire(tape->root());
}

}  // namespace gpureap::output

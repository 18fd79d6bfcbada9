// Both halves of the evidence wire (evidence_wire.h). The kernel log and the IPC residue are
// encoded and decoded by their descriptions (output/wire_fields.h) through the one codec
// (output/wire_codec.h); the snapshots inside are snapshot wire documents of their own.
#include "output/evidence_wire.h"

#include "output/snapshot_wire.h"
#include "output/wire_codec.h"
#include "output/wire_fields.h"

namespace gpureap::output {
namespace {

using nlohmann::json;
using wire::decode;

std::shared_ptr<const core::Snapshot> snapshot_of(const wire::Value& v, const std::string& path) {
  auto s = snapshot_from_wire(v);
  if (!s) throw wire::WireError{path + ": " + s.error().message, !s.error().hint.empty()};
  return std::make_shared<const core::Snapshot>(std::move(*s));
}

doctor::Evidence evidence_of(const wire::Value& v) {
  wire::Object o(v, "");
  wire::expect_version(o, "evidence", kEvidenceWireVersion);
  doctor::Evidence e;
  e.last = snapshot_of(o.at("last"), "last");
  e.first = o.at("first").is_null() ? e.last : snapshot_of(o.at("first"), "first");
  e.ipc = decode<decltype(e.ipc)>(o.at("ipc"), "ipc");
  e.kernel = decode<decltype(e.kernel)>(o.at("kernel"), "kernel");
  e.work_server_log =
      decode<decltype(e.work_server_log)>(o.at("work_server_log"), "work_server_log");
  o.finish();
  return e;
}

}  // namespace

// Every field but `blocked` (evidence_wire.h says why).
static_assert(core::field_count<doctor::Evidence>() == 6);
std::string evidence_to_wire_text(const doctor::Evidence& e) {
  std::string out = "{";
  wire::write_member(out, "evidence", kEvidenceWireVersion);
  wire::write_key(out, "last");
  write_snapshot_inputs(out, *e.last);
  wire::write_key(out, "first");
  if (e.first && e.first != e.last)
    write_snapshot_inputs(out, *e.first);
  else
    out += "null";
  wire::write_member(out, "ipc", e.ipc);
  wire::write_member(out, "kernel", e.kernel);
  wire::write_member(out, "work_server_log", e.work_server_log);
  out += '}';
  return out;
}

json evidence_to_wire(const doctor::Evidence& e) {
  return json::parse(evidence_to_wire_text(e));
}

core::Result<doctor::Evidence> evidence_from_wire(const wire::Value& wire) {
  return wire::decoded("the daemon's evidence is invalid", [&] { return evidence_of(wire); });
}

core::Result<doctor::Evidence> evidence_from_wire(const json& wire) {
  return wire::decoded("the daemon's evidence is invalid",
                       [&] { return evidence_of(wire::Tape::of(wire).root()); });
}

}  // namespace gpureap::output

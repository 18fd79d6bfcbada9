#include "output/sightings_wire.h"

#include "output/wire_codec.h"
#include "output/wire_fields.h"

namespace gpureap::output {
namespace {

constexpr const char* kInvalid = "the saved sightings are invalid";

}  // namespace

std::string sightings_to_wire_text(const core::CarriedSightings& s) {
  std::string out = "{";
  wire::write_member(out, "sightings", kSightingsWireVersion);
  wire::write_member(out, "carried", s);
  out += '}';
  return out;
}

core::Result<core::CarriedSightings> sightings_from_wire_text(std::string_view text) {
  auto tape = wire::Tape::read(text);
  if (!tape) return core::Error{std::string(kInvalid) + ": not a JSON document (cut short?)", ""};
  return wire::decoded(kInvalid, [&] {
    wire::Object o(tape->root(), "");
    wire::expect_version(o, "sightings", kSightingsWireVersion);
    auto s = wire::decode<core::CarriedSightings>(o.at("carried"), "carried");
    o.finish();
    return s;
  });
}

}  // namespace gpureap::output

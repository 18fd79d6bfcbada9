#pragma once
// The file the daemon hands its sightings to its next run in (core::CarriedSightings,
// daemon/sightings_file.h): {"sightings": V, "carried": {...}}, V being
// kSightingsWireVersion, each field under its description's key (output/wire_fields.h) and
// encoded as the snapshot wire encodes (output/snapshot_wire.h says how). Decoding is as strict:
// a file of another version, or one that is cut short or altered, is an error, never half-read.
#include <string>
#include <string_view>

#include "core/listed_sightings.h"
#include "core/result.h"

namespace gpureap::output {

// Changes whenever a field is added, removed or changes meaning: the next run of another
// version starts without the file rather than misread it.
inline constexpr int kSightingsWireVersion = 2;

std::string sightings_to_wire_text(const core::CarriedSightings& sightings);
core::Result<core::CarriedSightings> sightings_from_wire_text(std::string_view text);

}  // namespace gpureap::output

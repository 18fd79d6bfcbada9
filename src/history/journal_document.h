#pragma once
// The incident journal's lanes and events as the `incident` part of gpureap.history/v1 carries
// them, written and read in this one place: the daemon writes them (daemon/incident, beside the
// GPUs' names and the state now), `gpureap report` reads them back (report/incident). A field
// added to a lane or an event stops the build here until it is written and read;
// tests/unit/test_history_journal_document.cpp round-trips every field.
#include <nlohmann/json.hpp>

#include "core/result.h"
#include "history/journal.h"

namespace gpureap::history {

// Sets the "lanes" and "events" members of `incident`.
void journal_to_json(const JournalView& journal, nlohmann::json& incident);

// The lanes and events of an `incident` object, strictly: a missing or mistyped member is an
// error naming its path ("incident.lanes[0].pid"). An event of a kind this gpureap does not know
// (from a newer daemon) is left out.
core::Result<JournalView> journal_from_json(const nlohmann::json& incident);

}  // namespace gpureap::history

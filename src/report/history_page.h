#pragma once
// The page of the daemon's history: what /api/v1/history returned (or a saved copy of it) and,
// when it could be read, the audit log of the policies over the same span.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "audit/record.h"
#include "core/result.h"
#include "history/history_document.h"
#include "history/series.h"
#include "report/incident.h"
#include "report/page.h"

namespace gpureap::report {

// A final close of a GPU file (the `releases` of /api/v1/history).
using FileRelease = history::Release;

struct HistoryInput {
  std::string hostname;
  TimePoint since;
  history::HistoryView history;
  std::vector<FileRelease> releases;
  std::vector<audit::Record> audit;
  // Events of other sources, drawn on every GPU's chart as they are: the hook through which
  // kernel evidence (GPU errors) joins the page without this module reading the kernel.
  std::vector<Marker> events;
  // The daemon's incident journal (lanes, who acted, the state now), when it sent one.
  std::optional<Incident> incident;
  // The end of the window (--until); empty: the history's last sample.
  std::optional<TimePoint> until;
};

// A gpureap.history/v1 document, as /api/v1/history serves it. Anything else (another schema,
// a field of the wrong type) is an error naming what is wrong.
core::Result<HistoryInput> parse_history_document(std::string_view json_text);

struct HistoryPageOptions {
  size_t named_processes = 5;  // per GPU: the largest this many by memory-time, then "other"
  TimePoint generated;
};

Page build_history_page(const HistoryInput& input, const HistoryPageOptions& options);

}  // namespace gpureap::report

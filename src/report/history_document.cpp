// Reading a gpureap.history/v1 document back: the daemon's answer, or a copy a user saved. The
// document itself is history/history_document's; the daemon's incident journal rides with it.
#include "history/history_document.h"

#include <nlohmann/json.hpp>

#include "report/history_page.h"
#include "text/escape.h"

namespace gpureap::report {

core::Result<HistoryInput> parse_history_document(std::string_view text) {
  auto doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded())
    return core::Error{"the history is not JSON",
                       "give the file /api/v1/history returned, e.g. curl -o history.json "
                       "'http://127.0.0.1:9842/api/v1/history?since=6h'"};
  auto history = history::history_from_json(doc);
  if (!history) return history.error();
  HistoryInput in;
  in.hostname = std::move(history->hostname);
  in.since = history->since;
  in.history = std::move(history->view);
  in.releases = std::move(history->releases);
  // Daemons that keep the incident journal add it; older ones and saved copies may not.
  if (auto it = doc.find("incident"); it != doc.end() && !it->is_null()) {
    auto incident = parse_incident(*it);
    if (!incident)
      return core::Error{text::terminal_safe(incident.error().message), incident.error().hint};
    in.incident = std::move(*incident);
  }
  return in;
}

}  // namespace gpureap::report

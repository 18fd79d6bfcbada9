#include "output/ps_render.h"

#include <algorithm>

#include "output/ps_view.h"
#include "output/snapshot_json.h"
#include "output/view_incomplete.h"
#include "text/escape.h"
#include "text/wrap.h"

namespace gpureap::output {
std::vector<std::string> driver_timeout_lines(const core::Snapshot& s) {
  std::vector<std::string> lines;
  for (const auto& b : s.drivers.backends) {
    if (b.error_code != core::BackendErrorCode::NotAnswering) continue;
    lines.push_back("gpureap: " +
                    text::terminal_safe(b.error.value_or("the GPU driver did not answer")));
  }
  if (!lines.empty()) lines.push_back("  what is shown comes from /proc alone (exit status 4)");
  return lines;
}

bool is_protected_process_note(const std::string& warning) {
  // The collector's wording (collect/collector.cpp): no privilege would reveal more, so it is
  // no news on the next run.
  return warning.find("the kernel refuses to show its open files") != std::string::npos;
}

// What the views leave out because it is no news on this machine, said with --verbose: a
// backend with no GPU of its kind here (a library without its hardware) and why, and GPUs named
// by their PCI ids for want of the PCI ID database.
std::vector<std::string> silent_backend_notes(const core::DriverReading& drivers) {
  std::vector<std::string> out;
  for (const auto& b : drivers.backends) {
    if (b.error_code == core::BackendErrorCode::NoDevice)
      out.push_back(text::terminal_safe(b.label()) + ": no GPU of its kind here" +
                    (b.error ? " (" + text::terminal_safe(*b.error) + ")" : ""));
    if (const auto* ids = b.detail("pci_ids"); ids && *ids == "none")
      out.push_back(text::terminal_safe(b.label()) +
                    ": no PCI ID database (the pci.ids package), so GPUs are named by their "
                    "PCI ids");
    // What the library lacks for a capability no GPU here uses (instances on GPUs not split).
    if (const auto* quiet = b.detail("quiet_notes"))
      for (size_t i = 0; i < quiet->size();) {
        size_t end = std::min(quiet->find('\n', i), quiet->size());
        out.push_back(text::terminal_safe(quiet->substr(i, end - i)));
        i = end + 1;
      }
  }
  return out;
}

PsRendered render_ps_command(const core::Snapshot& scanned, const PsRenderOptions& o) {
  PsRendered r;
  if (auto bad = check_selection(scanned, o.select)) {
    r.err.push_back("gpureap: " + text::terminal_safe(bad->error.message));
    r.err.push_back("  " + text::terminal_safe(bad->error.hint));
    r.exit_code = bad->driver_down ? kPsExitDriverTimeout : kPsExitUsage;
    return r;
  }
  core::Snapshot s = select_rows(scanned, o.select);
  // The JSON carries the warnings itself; the other formats say them on stderr.
  // A note wrapped to the terminal, its lines after the first indented.
  auto note = [&](const std::string& safe) {
    std::string lines = text::wrap_paragraph(safe, o.width.value_or(0), "gpureap: note: ", "  ");
    for (size_t i = 0; i < lines.size();) {
      size_t end = std::min(lines.find('\n', i), lines.size());
      r.err.push_back(lines.substr(i, end - i));
      i = end + 1;
    }
  };
  if (o.format != PsFormat::Json)
    for (const auto& w : s.all_warnings())
      if (o.verbose || !is_protected_process_note(w)) note(text::terminal_safe(w));
  if (o.verbose && o.format != PsFormat::Json)
    for (const auto& w : silent_backend_notes(s.drivers)) note(w);
  if (!s.complete()) r.err.push_back("gpureap: " + view_incomplete(s));
  switch (o.format) {
    case PsFormat::Json: {
      const auto source = source_json(o.daemon_age);
      r.out = snapshot_text(s, 2, &source) + "\n";
      break;
    }
    case PsFormat::Csv:
      r.out = render_ps_csv(s);
      break;
    case PsFormat::Table: {
      Style style(o.color);
      r.out = render_ps(
          s, style, {o.tree, o.width, o.unicode, o.select.sort, o.compact, scope_words(o.select)});
      if (o.daemon_age) r.out += style.paint(daemon_source_line(*o.daemon_age), Color::Dim) + "\n";
      break;
    }
  }
  // A scan that failed (gpureap out of file descriptors or memory) is no answer: what it shows
  // is true, but a holder may be missing from it.
  if (!s.proc.scan_failures.empty()) r.exit_code = kPsExitUsage;
  auto timeout = driver_timeout_lines(s);
  if (!timeout.empty()) r.exit_code = kPsExitDriverTimeout;
  r.err.insert(r.err.end(), timeout.begin(), timeout.end());
  return r;
}

}  // namespace gpureap::output

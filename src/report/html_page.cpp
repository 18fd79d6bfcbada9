#include "report/html_page.h"

#include <algorithm>

#include "base/version.h"
#include "report/svg_chart.h"
#include "report/timeline_svg.h"
#include "text/byte_format.h"
#include "text/escape.h"
#include "text/time_format.h"

namespace gpureap::report {
namespace {

// A page with thousands of final closes lists the latest this many under each chart.
constexpr size_t kMaxListedMarkers = 200;

constexpr const char* kStyle = R"(
:root { color-scheme: light; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
       margin: 16px auto; max-width: 1240px; padding: 0 12px; color: #1a1a1a; background: #fff; }
h1 { font-size: 22px; margin: 0 0 2px; }
h2 { font-size: 17px; margin: 22px 0 4px; }
.sub, .note { color: #444; font-size: 14px; margin: 2px 0; }
svg.chart { width: 100%; height: auto; display: block; font-size: 13px; }
svg.chart .grid { stroke: #e3e3e3; stroke-width: 1; }
svg.chart .baseline, svg.chart .tick-mark { stroke: #333; stroke-width: 1; }
svg.chart .tick { fill: #333; font-size: 13px; }
svg.chart .axis-title { fill: #1a1a1a; font-size: 14px; }
svg.chart .band { stroke: #fff; stroke-width: 0.5; }
svg.chart .capacity line { stroke: #000; stroke-width: 2; stroke-dasharray: 8 5; }
svg.chart .capacity text { fill: #000; font-size: 13px; }
svg.chart .marker line { stroke-width: 1.5; stroke-dasharray: 4 3; }
svg.chart .marker text { fill: #fff; font-size: 11px; font-weight: bold; }
svg.chart .empty { fill: #666; font-size: 16px; }
ul.legend { list-style: none; padding: 0; margin: 6px 0; display: flex; flex-wrap: wrap;
            gap: 4px 18px; font-size: 13px; }
ul.legend li { display: flex; align-items: center; gap: 6px; }
ul.legend svg { width: 22px; height: 14px; flex: none; }
table { border-collapse: collapse; font-size: 13px; margin: 6px 0 10px; width: 100%; }
th, td { border-bottom: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
td.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
td.time { white-space: nowrap; font-variant-numeric: tabular-nums; }
.kind { display: inline-block; min-width: 18px; padding: 0 4px; border-radius: 9px; color: #fff;
        text-align: center; font-weight: bold; }
.ending-still-held { font-weight: bold; }
footer { color: #666; font-size: 12px; margin-top: 20px; }
svg.timeline { width: 100%; height: auto; display: block; font-size: 12px; margin-top: -6px; }
svg.timeline .lane-label { fill: #1a1a1a; font-size: 15px; }
svg.timeline .lane-rule { stroke: #e3e3e3; stroke-width: 1; }
svg.timeline .span { stroke: #fff; stroke-width: 0.5; }
section.now { border: 2px solid #1a1a1a; border-radius: 6px; padding: 8px 12px; margin: 10px 0; }
section.now h2 { margin: 0 0 6px; }
section.now ul { margin: 4px 0; padding-left: 18px; font-size: 14px; }
section.now li { margin: 2px 0; overflow-wrap: anywhere; }
.state { display: inline-block; padding: 0 6px; border-radius: 4px; font-weight: bold;
         font-size: 12px; color: #fff; background: #555; }
.state-attributed, .state-idle { background: #0072B2; }
.state-ghost { background: #D55E00; }
.state-leaked { background: #000; }
.state-unattributed { background: #6E6E6E; }
.sev-critical { color: #b00020; font-weight: bold; }
.sev-warning { color: #8a5a00; font-weight: bold; }
div.lead { display: flex; flex-wrap: wrap; gap: 0 24px; align-items: flex-start; }
div.lead > section { flex: 1 1 560px; min-width: 0; }
table.lead-table td { overflow-wrap: anywhere; }
code { font-size: 13px; background: #f3f3f3; padding: 0 3px; border-radius: 3px; }
@media print {
  body { max-width: none; margin: 0; }
  section.gpu { break-inside: avoid; }
  tr { break-inside: avoid; }
}
@page { size: A4 landscape; margin: 12mm; }
)";

std::string esc(const std::string& s) {
  return text::markup_safe(s);
}

std::string swatch(const std::string& fill, const std::string& defs = "") {
  return "<svg viewBox=\"0 0 22 14\" aria-hidden=\"true\">" + defs +
         "<rect width=\"22\" height=\"14\" fill=\"" + fill +
         "\" stroke=\"#555\" stroke-width=\"0.5\"/></svg>";
}

std::string legend(const GpuChart& c) {
  std::string s = "<ul class=\"legend\">";
  for (size_t b = 0; b < c.bands.size(); ++b) {
    const Band& band = c.bands[b];
    // An idle GPU's legend names no band that holds nothing.
    if (std::all_of(band.bytes.begin(), band.bytes.end(), [](uint64_t v) { return v == 0; }))
      continue;
    std::string fill = band_colour(band, b);
    std::string defs;
    if (band.kind == BandKind::Ghost) {
      defs = "<defs><pattern id=\"legend-hatch-" + std::to_string(c.gpu) +
             "\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
             "patternTransform=\"rotate(45)\">"
             "<rect width=\"6\" height=\"6\" fill=\"#D55E00\"/><line x1=\"0\" y1=\"0\" x2=\"0\" "
             "y2=\"6\" stroke=\"#fff\" stroke-width=\"2\"/></pattern></defs>";
      fill = "url(#legend-hatch-" + std::to_string(c.gpu) + ")";
    }
    s += "<li data-series=\"" + esc(band.id) + "\">" + swatch(fill, defs) + esc(band.label) +
         "</li>";
  }
  if (c.total_bytes)
    s +=
        "<li><svg viewBox=\"0 0 22 14\" aria-hidden=\"true\"><line x1=\"0\" y1=\"7\" x2=\"22\" "
        "y2=\"7\" stroke=\"#000\" stroke-width=\"2\" stroke-dasharray=\"5 3\"/></svg>capacity</li>";
  return s + "</ul>";
}

std::string kind_badge(MarkerKind kind, const std::string& number) {
  return "<span class=\"kind\" style=\"background:" + marker_colour(kind) + "\">" + number +
         "</span>";
}

std::string marker_table(const GpuChart& c) {
  if (c.markers.empty()) return "";
  std::string s =
      "<table class=\"markers\"><thead><tr><th>#</th><th>time (UTC)</th><th>what</th>"
      "<th>event</th></tr></thead><tbody>";
  const size_t first =
      c.markers.size() > kMaxListedMarkers ? c.markers.size() - kMaxListedMarkers : 0;
  for (size_t i = first; i < c.markers.size(); ++i) {
    const Marker& m = c.markers[i];
    s += "<tr data-kind=\"" + std::string(to_string(m.kind)) + "\"><td>" +
         kind_badge(m.kind, std::to_string(i + 1)) + "</td><td class=\"time\">" +
         utc_time(m.at, true) + "</td><td>" + to_string(m.kind) + "</td><td>" + esc(m.text) +
         "</td></tr>";
  }
  s += "</tbody></table>";
  if (first > 0)
    s += "<p class=\"note\">" + std::to_string(first) +
         " earlier events are drawn but not listed.</p>";
  return s;
}

std::string instance_list(const NowGpu& g) {
  if (g.instances.empty()) return "";
  std::string s = "<ul class=\"now-instances\">";
  for (const auto& i : g.instances) s += "<li>" + esc(i) + "</li>";
  return s + "</ul>";
}

std::string now_box(const NowBox& now) {
  std::string s = "<section class=\"now\" id=\"now\"><h2>Now <span class=\"note\">(" +
                  utc_time(now.at) + " UTC)</span></h2><ul class=\"now-gpus\">";
  for (const auto& g : now.gpus)
    s += "<li data-gpu=\"" + std::to_string(g.gpu) + "\" data-state=\"" + esc(g.state) +
         "\"><strong>" + esc(g.heading) + "</strong> <span class=\"state state-" + esc(g.state) +
         "\">" + esc(g.state) + "</span> " + esc(g.detail) + instance_list(g) + "</li>";
  s += "</ul>";
  if (now.problems.empty()) return s + "<p class=\"note\">No problem now.</p></section>";
  s += "<ul class=\"now-problems\">";
  for (const auto& p : now.problems)
    s += "<li><span class=\"sev-" + esc(p.severity) + "\">" + esc(p.severity) + "</span> " +
         esc(p.summary) +
         (p.command.empty() ? std::string() : " → <code>" + esc(p.command) + "</code>") + "</li>";
  return s + "</ul></section>";
}

std::string held_for(TimePoint from, TimePoint to) {
  return text::human_age(to > from ? to - from : TimePoint::duration{0});
}

std::string ghost_table(const Page& page) {
  std::string s = "<section class=\"ghosts\" id=\"ghosts\"><h2>Ghosts in this window</h2>";
  if (page.ghosts.empty())
    return s + "<p class=\"note\">No gone process held GPU memory in this window.</p></section>";
  s += "<table class=\"ghost-table\"><thead><tr><th>gone PID</th><th>name</th><th>GPU</th>"
       "<th>kept by</th><th>memory (peak)</th><th>held for</th><th>how it "
       "ended</th></tr></thead><tbody>";
  for (const auto& g : page.ghosts) {
    std::string keepers;
    for (const auto& k : g.keepers) keepers += (keepers.empty() ? "" : ", ") + esc(k);
    std::string ending = to_string(g.ending);
    std::string css = ending;
    for (char& ch : css)
      if (ch == ' ') ch = '-';
    s += "<tr data-pid=\"" + std::to_string(g.pid) + "\"><td class=\"num\">" +
         std::to_string(g.pid) + "</td><td>" + esc(g.comm) + "</td><td class=\"num\">" +
         std::to_string(g.gpu) + "</td><td>" + (keepers.empty() ? "unknown" : keepers) +
         "</td><td class=\"num\">" + text::human_bytes(g.peak_bytes) + "</td><td class=\"num\">" +
         held_for(g.first_seen, g.last_seen) + (g.ending == GhostEnding::StillHeld ? "+" : "") +
         "</td><td class=\"ending-" + css + "\">" + ending +
         (g.ending_detail.empty()
              ? ""
              : (g.ending == GhostEnding::EndedByCommand ? " " : ": ") + esc(g.ending_detail)) +
         "</td></tr>";
  }
  return s + "</tbody></table></section>";
}

std::string lanes_note(const Timeline& t) {
  if (t.lanes.empty()) return "";
  std::string s =
      "<p class=\"note lanes-key\">Lanes: a process from its first open of the GPU to its final "
      "close; blue alive, amber hatched stopped, orange hatched a ghost (gone, memory still "
      "held). ▼ a signal (hover: by whom), ✕ exit, ○ fork, ◆ became a ghost, ▲ memory back. "
      "Hover for details.";
  if (t.lanes_left_out)
    s += " " + std::to_string(t.lanes_left_out) + " smaller lanes are left out.";
  return s + "</p>";
}

// A GPU that no process used over the window (only what the driver attributes to nobody, no
// marker) gets one line instead of a chart: on a node with eight GPUs and one busy job, seven
// empty charts would push the one that matters off the screen.
std::optional<std::string> idle_line(const GpuChart& c) {
  if (c.draw_when_idle || !c.markers.empty() || !c.timeline.lanes.empty() ||
      !c.timeline.gpu_marks.empty())
    return std::nullopt;
  uint64_t most = 0;
  for (const auto& b : c.bands) {
    for (uint64_t v : b.bytes) {
      if (v && b.kind != BandKind::Unattributed) return std::nullopt;
      most = std::max(most, v);
    }
  }
  std::string line = "No process used it over the window";
  if (most) line += "; at most " + text::human_bytes(most) + " the driver attributes to no process";
  if (c.total_bytes) line += " (of " + text::human_bytes(*c.total_bytes) + ")";
  return line + ".";
}

std::string gpu_section(const GpuChart& c, const Page& page) {
  auto idle = idle_line(c);
  return std::string("<section class=\"gpu") + (idle ? " idle" : "") + "\" data-gpu=\"" +
         std::to_string(c.gpu) + "\"><h2>" + esc(c.title) + "</h2>" +
         (c.split.empty() ? "" : "<p class=\"note\">" + esc(c.split) + "</p>") +
         (idle ? "<p class=\"note\">" + esc(*idle) + "</p>"
               : render_chart_svg(c, page.from, page.to) +
                     render_timeline_svg(c.timeline, chart_geometry(c, page.from, page.to), c.gpu) +
                     lanes_note(c.timeline) + legend(c) + marker_table(c)) +
         "</section>";
}

std::string lead_table(const LeadTable& t) {
  std::string s = "<section class=\"lead-table\"><h2>" + esc(t.title) + "</h2>";
  if (!t.rows.empty()) {
    s += "<table class=\"lead-table\"><thead><tr>";
    for (const auto& h : t.headers) s += "<th>" + esc(h) + "</th>";
    s += "</tr></thead><tbody>";
    for (const auto& row : t.rows) {
      s += "<tr>";
      for (const auto& cell : row) {
        std::string lines;
        for (const auto& line : cell) lines += (lines.empty() ? "" : "<br>") + esc(line);
        s += "<td>" + lines + "</td>";
      }
      s += "</tr>";
    }
    s += "</tbody></table>";
  }
  if (!t.note.empty()) s += "<p class=\"note\">" + esc(t.note) + "</p>";
  return s + "</section>";
}

}  // namespace

std::string render_html(const Page& page) {
  std::string s =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
      "<title>" +
      esc(page.title) + "</title><style>" + kStyle + "</style></head><body>";
  s += "<header><h1>" + esc(page.title) + "</h1><p class=\"sub\">" + esc(page.subtitle) + "</p>";
  for (const auto& n : page.notes) s += "<p class=\"note\">" + esc(n) + "</p>";
  if (page.has_ghost_table && !page.ghosts.empty()) {
    size_t held = 0;
    for (const auto& g : page.ghosts) held += g.ending == GhostEnding::StillHeld;
    s += "<p class=\"note\"><a href=\"#ghosts\">" + std::to_string(page.ghosts.size()) +
         (page.ghosts.size() == 1 ? " ghost" : " ghosts") + " in this window</a>" +
         (held ? ", " + std::to_string(held) + " still held" : std::string()) + ".</p>";
  }
  s += "</header>";
  if (page.now) s += now_box(*page.now);
  std::string charts;
  for (const auto& c : page.gpus) charts += gpu_section(c, page);
  s += page.lead ? "<div class=\"lead\">" + lead_table(*page.lead) + charts + "</div>" : charts;
  if (page.has_ghost_table) s += ghost_table(page);
  s += "<footer>Written by gpureap " + text::markup_safe(base::version()) + " at " +
       utc_time(page.generated) + " UTC.";
  if (page.has_ghost_table)
    s += " Memory is the driver's; ghost memory is held by processes the driver lists that are "
         "gone from /proc, kept alive by live processes that share their GPU files.";
  s += "</footer>";
  return s + "</body></html>\n";
}

}  // namespace gpureap::report

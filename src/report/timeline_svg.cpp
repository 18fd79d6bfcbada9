#include "report/timeline_svg.h"

#include <cstdio>

#include "text/escape.h"

namespace gpureap::report {
namespace timeline_detail {

constexpr double kLaneHeight = 34;
constexpr double kBarTop = 19, kBarHeight = 11;
constexpr double kTop = 6, kBottom = 8;

std::string n1(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

const char* span_class(SpanKind k) {
  switch (k) {
    case SpanKind::Alive:
      return "alive";
    case SpanKind::Stopped:
      return "stopped";
    case SpanKind::Ghost:
      return "ghost";
  }
  return "alive";
}

std::string span_fill(SpanKind k, unsigned gpu) {
  switch (k) {
    case SpanKind::Alive:
      return "#0072B2";
    case SpanKind::Stopped:
      return "url(#stopped-hatch-" + std::to_string(gpu) + ")";
    case SpanKind::Ghost:
      return "url(#lane-ghost-hatch-" + std::to_string(gpu) + ")";
  }
  return "#0072B2";
}

// One glyph per kind, centred on (x, y): shapes tell them apart in grey print too.
std::string glyph(history::JournalEventKind k, double x, double y) {
  const std::string X = n1(x), Y = n1(y);
  auto path = [&](const std::string& d, const char* fill, const char* stroke = "none") {
    return "<path d=\"" + d + "\" fill=\"" + fill + "\" stroke=\"" + stroke +
           "\" stroke-width=\"2\"/>";
  };
  switch (k) {
    case history::JournalEventKind::Signal:  // a black triangle pointing down: something hit it
      return path("M" + n1(x - 6) + " " + n1(y - 8) + " L" + n1(x + 6) + " " + n1(y - 8) + " L" +
                      X + " " + n1(y + 2) + " Z",
                  "#000000");
    case history::JournalEventKind::Exit:
      return path("M" + n1(x - 5) + " " + n1(y - 5) + " L" + n1(x + 5) + " " + n1(y + 5) + " M" +
                      n1(x + 5) + " " + n1(y - 5) + " L" + n1(x - 5) + " " + n1(y + 5),
                  "none", "#000000");
    case history::JournalEventKind::Fork:
      return "<circle cx=\"" + X + "\" cy=\"" + Y +
             "\" r=\"5\" fill=\"#ffffff\" stroke=\"#0072B2\" stroke-width=\"2\"/>";
    case history::JournalEventKind::Ghost:
      return path("M" + X + " " + n1(y - 7) + " L" + n1(x + 6) + " " + Y + " L" + X + " " +
                      n1(y + 7) + " L" + n1(x - 6) + " " + Y + " Z",
                  "#D55E00", "#ffffff");
    case history::JournalEventKind::Leak:
      return "<rect x=\"" + n1(x - 5) + "\" y=\"" + n1(y - 5) +
             "\" width=\"10\" height=\"10\" fill=\"#D55E00\" stroke=\"#000\" "
             "stroke-width=\"1.5\"/>";
    case history::JournalEventKind::Stopped:
    case history::JournalEventKind::Resumed:
      return "<rect x=\"" + n1(x - 5) + "\" y=\"" + n1(y - 6) +
             "\" width=\"3.5\" height=\"12\" fill=\"#E69F00\"/><rect x=\"" + n1(x + 1.5) +
             "\" y=\"" + n1(y - 6) + "\" width=\"3.5\" height=\"12\" fill=\"" +
             (k == history::JournalEventKind::Stopped ? "#E69F00" : "#009E73") + "\"/>";
    case history::JournalEventKind::Close:
      return path("M" + X + " " + n1(y - 8) + " L" + X + " " + n1(y + 8), "none", "#009E73");
    case history::JournalEventKind::MemoryBack:
      return path("M" + n1(x - 6) + " " + n1(y + 6) + " L" + n1(x + 6) + " " + n1(y + 6) + " L" +
                      X + " " + n1(y - 6) + " Z",
                  "#009E73", "#ffffff");
    case history::JournalEventKind::GpuError:
      return "<circle cx=\"" + X + "\" cy=\"" + Y + "\" r=\"6\" fill=\"#CC79A7\"/>";
    case history::JournalEventKind::Reset:
      return "<rect x=\"" + n1(x - 6) + "\" y=\"" + n1(y - 6) +
             "\" width=\"12\" height=\"12\" fill=\"#000\"/>";
  }
  return "";
}

void mark(std::string& s, const LaneMark& m, double x, double y) {
  s += "<g class=\"lane-mark mark-" + std::string(to_string(m.kind)) + "\"><title>" +
       text::markup_safe(m.text) + "</title>" + glyph(m.kind, x, y) + "</g>";
}

}  // namespace timeline_detail

double timeline_height(const Timeline& t) {
  using namespace timeline_detail;
  const size_t rows = t.lanes.size() + (t.gpu_marks.empty() ? 0 : 1);
  return kTop + static_cast<double>(rows) * kLaneHeight + kBottom;
}

std::string render_timeline_svg(const Timeline& t, const ChartGeometry& g, unsigned gpu) {
  using namespace timeline_detail;
  if (t.lanes.empty() && t.gpu_marks.empty()) return "";
  const double height = timeline_height(t);
  std::string s = "<svg class=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " +
                  n1(g.width) + " " + n1(height) + "\" role=\"img\" aria-label=\"GPU " +
                  std::to_string(gpu) + ": who held it, over time\" data-gpu=\"" +
                  std::to_string(gpu) + "\">";
  s += "<defs><pattern id=\"stopped-hatch-" + std::to_string(gpu) +
       "\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
       "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#E69F00\"/>"
       "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#ffffff\" stroke-width=\"2\"/>"
       "</pattern><pattern id=\"lane-ghost-hatch-" +
       std::to_string(gpu) +
       "\" width=\"8\" height=\"8\" patternUnits=\"userSpaceOnUse\" "
       "patternTransform=\"rotate(45)\"><rect width=\"8\" height=\"8\" fill=\"#D55E00\"/>"
       "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"8\" stroke=\"#ffffff\" stroke-width=\"3\"/>"
       "</pattern></defs>";
  const double x0 = g.left, x1 = g.width - g.right;
  double y = kTop;
  if (!t.gpu_marks.empty()) {
    s += "<g class=\"lane lane-gpu\"><text class=\"lane-label\" x=\"" + n1(x0 - 8) + "\" y=\"" +
         n1(y + kBarTop + 8) + "\" text-anchor=\"end\">GPU</text>";
    for (const auto& m : t.gpu_marks) mark(s, m, g.x(m.at), y + kBarTop + 5);
    s += "</g>";
    y += kLaneHeight;
  }
  for (const auto& lane : t.lanes) {
    std::string kinds;
    for (const auto& sp : lane.spans) {
      std::string k = span_class(sp.kind);
      if (kinds.find(k) == std::string::npos) kinds += (kinds.empty() ? "" : " ") + k;
    }
    s += "<g class=\"lane" + std::string(lane.leaked ? " leaked" : "") +
         (lane.stopped_now ? " stopped-now" : "") + "\" data-pid=\"" + std::to_string(lane.pid) +
         "\" data-spans=\"" + kinds + "\"><title>" + text::markup_safe(lane.title) + "</title>";
    s += "<line class=\"lane-rule\" x1=\"" + n1(x0) + "\" x2=\"" + n1(x1) + "\" y1=\"" +
         n1(y + kBarTop + kBarHeight / 2) + "\" y2=\"" + n1(y + kBarTop + kBarHeight / 2) + "\"/>";
    for (const auto& sp : lane.spans) {
      const double a = g.x(sp.from), b = std::max(g.x(sp.to), a + 2);
      s += "<rect class=\"span span-" + std::string(span_class(sp.kind)) + "\" x=\"" + n1(a) +
           "\" y=\"" + n1(y + kBarTop) + "\" width=\"" + n1(b - a) + "\" height=\"" +
           n1(kBarHeight) + "\" fill=\"" + span_fill(sp.kind, gpu) + "\"/>";
    }
    // The label rides above its lane from where the lane begins, kept inside the plot.
    const double lx =
        std::min(std::max(lane.spans.empty() ? x0 : g.x(lane.spans.front().from), x0), x1 - 160);
    std::string label = lane.label;
    if (lane.leaked) label += " · leaked: kept by nobody";
    if (lane.stopped_now) label += " · stopped";
    s += "<text class=\"lane-label\" x=\"" + n1(lx) + "\" y=\"" + n1(y + kBarTop - 3) + "\">" +
         text::markup_safe(label) + "</text>";
    for (const auto& m : lane.marks) mark(s, m, g.x(m.at), y + kBarTop + kBarHeight / 2);
    s += "</g>";
    y += kLaneHeight;
  }
  return s + "</svg>";
}

}  // namespace gpureap::report

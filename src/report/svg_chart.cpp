#include "report/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>

#include "text/byte_format.h"
#include "text/escape.h"

namespace gpureap::report {
namespace {

using std::chrono::duration_cast;
using std::chrono::milliseconds;

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kGiB = uint64_t{1} << 30;

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

int64_t ms_of(TimePoint t) {
  return duration_cast<milliseconds>(t.time_since_epoch()).count();
}

// The smallest of 1, 2, 5 × 10^k units that draws at most `max_ticks` lines up to `value`.
uint64_t nice_step(double value_units, int max_ticks) {
  double step = 1;
  for (int i = 0; i < 40; ++i) {
    for (double m : {1.0, 2.0, 5.0})
      if (value_units / (m * step) <= max_ticks) return static_cast<uint64_t>(m * step);
    step *= 10;
  }
  return static_cast<uint64_t>(step);
}

std::string utc_clock(TimePoint t, bool seconds) {
  std::time_t s = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&s, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, seconds ? "%H:%M:%S" : "%H:%M", &tm);
  return buf;
}

// Cumulative tops of the bands, bottom to top, per sample.
std::vector<std::vector<uint64_t>> stack_of(const GpuChart& c) {
  std::vector<std::vector<uint64_t>> tops(c.bands.size(), std::vector<uint64_t>(c.times.size()));
  for (size_t i = 0; i < c.times.size(); ++i) {
    uint64_t sum = 0;
    for (size_t b = 0; b < c.bands.size(); ++b) {
      sum += i < c.bands[b].bytes.size() ? c.bands[b].bytes[i] : 0;
      tops[b][i] = sum;
    }
  }
  return tops;
}

// Runs of samples with no gap between neighbours: [first, last] indices.
std::vector<std::pair<size_t, size_t>> segments_of(const GpuChart& c) {
  std::vector<std::pair<size_t, size_t>> out;
  for (size_t i = 0; i < c.times.size(); ++i) {
    if (out.empty() || c.times[i] - c.times[i - 1] > c.gap)
      out.push_back({i, i});
    else
      out.back().second = i;
  }
  return out;
}

void axes(std::string& s, const ChartGeometry& g) {
  const double x0 = g.left, x1 = g.width - g.right, y0 = g.top, y1 = g.height - g.bottom;
  s += "<g class=\"axis y-axis\">";
  for (uint64_t v = 0; v <= g.y_max; v += g.y_step) {
    double y = g.y(v);
    s += "<line class=\"grid\" x1=\"" + num(x0) + "\" x2=\"" + num(x1) + "\" y1=\"" + num(y) +
         "\" y2=\"" + num(y) + "\"/>";
    s += "<text class=\"tick\" x=\"" + num(x0 - 8) + "\" y=\"" + num(y + 4) +
         "\" text-anchor=\"end\">" + std::to_string(v / g.unit) + "</text>";
    if (g.y_step == 0) break;
  }
  s += "<text class=\"axis-title\" transform=\"translate(18 " + num((y0 + y1) / 2) +
       ") rotate(-90)\" text-anchor=\"middle\">memory used (" + std::string(g.unit_name) +
       ")</text></g>";

  const int64_t span_ms = std::max<int64_t>(ms_of(g.to) - ms_of(g.from), 1);
  static constexpr int64_t kSteps[] = {1,   5,    10,   15,   30,    60,    120,   300,   600,
                                       900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800};
  int64_t step_s = kSteps[std::size(kSteps) - 1];
  for (int64_t st : kSteps)
    if (span_ms / (st * 1000) <= 10) {
      step_s = st;
      break;
    }
  s += "<g class=\"axis x-axis\"><line class=\"baseline\" x1=\"" + num(x0) + "\" x2=\"" + num(x1) +
       "\" y1=\"" + num(y1) + "\" y2=\"" + num(y1) + "\"/>";
  const int64_t step_ms = step_s * 1000;
  for (int64_t t = (ms_of(g.from) + step_ms - 1) / step_ms * step_ms; t <= ms_of(g.to);
       t += step_ms) {
    double x = g.x(TimePoint(milliseconds(t)));
    s += "<line class=\"tick-mark\" x1=\"" + num(x) + "\" x2=\"" + num(x) + "\" y1=\"" + num(y1) +
         "\" y2=\"" + num(y1 + 5) + "\"/>";
    s += "<text class=\"tick\" x=\"" + num(x) + "\" y=\"" + num(y1 + 20) +
         "\" text-anchor=\"middle\">" + utc_clock(TimePoint(milliseconds(t)), step_s < 60) +
         "</text>";
  }
  s += "<text class=\"axis-title\" x=\"" + num((x0 + x1) / 2) + "\" y=\"" + num(g.height - 8) +
       "\" text-anchor=\"middle\">time (UTC)</text></g>";
}

void bands(std::string& s, const GpuChart& c, const ChartGeometry& g) {
  auto tops = stack_of(c);
  auto segments = segments_of(c);
  for (size_t b = 0; b < c.bands.size(); ++b) {
    const Band& band = c.bands[b];
    s += "<path class=\"band band-" +
         std::string(band.kind == BandKind::Process ? "process"
                     : band.kind == BandKind::Other ? "other"
                     : band.kind == BandKind::Ghost ? "ghost"
                                                    : "unattributed") +
         "\" data-series=\"" + text::markup_safe(band.id) + "\" fill=\"" +
         band_fill(band, b, c.gpu) + "\" d=\"";
    for (auto [first, last] : segments) {
      // A lone sample is drawn as a sliver, so it is still seen.
      const double pad = first == last ? 1.5 : 0;
      auto xs = [&](size_t i, bool end) { return g.x(c.times[i]) + (end ? pad : -pad); };
      std::vector<std::pair<double, double>> outline;
      for (size_t i = first; i <= last; ++i) {
        outline.push_back({xs(i, false), g.y(tops[b][i])});
        if (pad > 0) outline.push_back({xs(i, true), g.y(tops[b][i])});
      }
      for (size_t i = last + 1; i-- > first;) {
        if (pad > 0) outline.push_back({xs(i, true), g.y(b ? tops[b - 1][i] : 0)});
        outline.push_back({xs(i, false), g.y(b ? tops[b - 1][i] : 0)});
      }
      s += "M" + num(outline[0].first) + " " + num(outline[0].second);
      // A vertex in the middle of a level run adds nothing: steady memory costs two vertices,
      // not one per sample (a day's page stays small).
      for (size_t k = 1; k < outline.size(); ++k) {
        const bool level = k + 1 < outline.size() &&
                           num(outline[k - 1].second) == num(outline[k].second) &&
                           num(outline[k + 1].second) == num(outline[k].second);
        if (!level) s += " L" + num(outline[k].first) + " " + num(outline[k].second);
      }
      s += " Z ";
    }
    s += "\"><title>" + text::markup_safe(band.label) + "</title></path>";
  }
}

void capacity(std::string& s, const GpuChart& c, const ChartGeometry& g) {
  if (!c.total_bytes) return;
  if (*c.total_bytes > g.y_max) {
    s += "<g class=\"capacity off-scale\" data-bytes=\"" + std::to_string(*c.total_bytes) +
         "\"><text x=\"" + num(g.width - g.right - 4) + "\" y=\"" + num(g.top - 5) +
         "\" text-anchor=\"end\">GPU total " + text::human_bytes(*c.total_bytes) +
         " ↑ (above this scale)</text></g>";
    return;
  }
  double y = g.y(*c.total_bytes);
  s += "<g class=\"capacity\" data-bytes=\"" + std::to_string(*c.total_bytes) + "\"><line x1=\"" +
       num(g.left) + "\" x2=\"" + num(g.width - g.right) + "\" y1=\"" + num(y) + "\" y2=\"" +
       num(y) + "\"/><text x=\"" + num(g.width - g.right - 4) + "\" y=\"" + num(y - 5) +
       "\" text-anchor=\"end\">capacity " + text::human_bytes(*c.total_bytes) + "</text></g>";
}

// Markers closer than a glyph's width (a kill and the final close a second later) would hide
// each other: each takes the first of a few rows where it clears the previous glyph.
constexpr double kGlyphClearance = 19;
constexpr int kGlyphRows = 4;

void markers(std::string& s, const GpuChart& c, const ChartGeometry& g) {
  const double y1 = g.height - g.bottom;
  double row_end[kGlyphRows];
  for (double& e : row_end) e = -1e9;
  for (size_t i = 0; i < c.markers.size(); ++i) {
    const Marker& m = c.markers[i];
    double x = g.x(m.at);
    int row = 0;
    while (row + 1 < kGlyphRows && x - row_end[row] < kGlyphClearance) ++row;
    row_end[row] = x;
    const double y0 = g.top + row * kGlyphClearance;
    std::string kind = to_string(m.kind);
    s += "<g class=\"marker marker-" + kind + "\" data-kind=\"" + kind + "\" data-x=\"" + num(x) +
         "\"><title>" + std::to_string(i + 1) + ". " + text::markup_safe(m.text) +
         "</title><line x1=\"" + num(x) + "\" x2=\"" + num(x) + "\" y1=\"" + num(y0 + 14) +
         "\" y2=\"" + num(y1) + "\" stroke=\"" + marker_colour(m.kind) + "\"/><circle cx=\"" +
         num(x) + "\" cy=\"" + num(y0 + 7) + "\" r=\"8\" fill=\"" + marker_colour(m.kind) +
         "\"/><text x=\"" + num(x) + "\" y=\"" + num(y0 + 10.5) + "\" text-anchor=\"middle\">" +
         std::to_string(i + 1) + "</text></g>";
  }
}

}  // namespace

double ChartGeometry::x(TimePoint t) const {
  const double span = std::max<double>(static_cast<double>(ms_of(to) - ms_of(from)), 1);
  const double f = static_cast<double>(ms_of(t) - ms_of(from)) / span;
  return left + std::clamp(f, 0.0, 1.0) * (width - left - right);
}

double ChartGeometry::y(uint64_t bytes) const {
  const double f = static_cast<double>(std::min(bytes, y_max)) / static_cast<double>(y_max);
  return (height - bottom) - f * (height - bottom - top);
}

ChartGeometry chart_geometry(const GpuChart& c, TimePoint from, TimePoint to) {
  ChartGeometry g;
  g.from = from;
  g.to = to > from ? to : from + std::chrono::seconds(1);
  uint64_t data_top = 0;
  for (const auto& column : stack_of(c))
    for (uint64_t v : column) data_top = std::max(data_top, v);
  // Scaled to the data, 12 GiB on an 80 GiB GPU fills the chart; the total is drawn where it
  // is when it is near the data's top, and named at the top when it is far above.
  uint64_t top = data_top;
  const uint64_t total = c.total_bytes.value_or(0);
  if (!c.scale_to_data || total <= data_top + data_top / 4) top = std::max(top, total);
  if (top == 0) top = total;
  g.unit = top >= 2 * kGiB ? kGiB : kMiB;
  g.unit_name = g.unit == kGiB ? "GiB" : "MiB";
  const double units = std::max(1.0, static_cast<double>(top) / static_cast<double>(g.unit));
  g.y_step = nice_step(units, 8) * g.unit;
  g.y_max = (top + g.y_step - 1) / g.y_step * g.y_step;
  if (g.y_max == 0) g.y_max = g.y_step;
  return g;
}

std::string band_colour(const Band& band, size_t index) {
  static const char* const kProcess[] = {"#0072B2", "#56B4E9", "#009E73",
                                         "#CC79A7", "#F0E442", "#E69F00"};
  switch (band.kind) {
    case BandKind::Process:
      return kProcess[index % std::size(kProcess)];
    case BandKind::Other:
      return "#BBBBBB";
    case BandKind::Ghost:
      return "#D55E00";
    case BandKind::Unattributed:
      return "#6E6E6E";
  }
  return "#000000";
}

std::string band_fill(const Band& band, size_t index, unsigned gpu) {
  // Ghost memory is hatched too: it stays apart from its neighbours in grey print.
  if (band.kind == BandKind::Ghost) return "url(#ghost-hatch-" + std::to_string(gpu) + ")";
  return band_colour(band, index);
}

std::string marker_colour(MarkerKind kind) {
  switch (kind) {
    case MarkerKind::Kill:
      return "#000000";
    case MarkerKind::PolicyAction:
      return "#0072B2";
    case MarkerKind::Release:
      return "#009E73";
    case MarkerKind::GpuError:
      return "#CC79A7";
    case MarkerKind::JobEnd:
      return "#E69F00";
    case MarkerKind::Teardown:
      return "#56B4E9";
  }
  return "#000000";
}

std::string render_chart_svg(const GpuChart& c, TimePoint from, TimePoint to) {
  const auto g = chart_geometry(c, from, to);
  std::string s = "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " +
                  num(g.width) + " " + num(g.height) + "\" role=\"img\" aria-label=\"" +
                  text::markup_safe(c.title) + ": memory used over time\" data-gpu=\"" +
                  std::to_string(c.gpu) + "\" data-y-max=\"" + std::to_string(g.y_max) + "\">";
  s += "<defs><pattern id=\"ghost-hatch-" + std::to_string(c.gpu) +
       "\" width=\"8\" height=\"8\" patternUnits=\"userSpaceOnUse\" "
       "patternTransform=\"rotate(45)\"><rect width=\"8\" height=\"8\" fill=\"#D55E00\"/>"
       "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"8\" stroke=\"#FFFFFF\" stroke-width=\"3\"/>"
       "</pattern></defs>";
  axes(s, g);
  bands(s, c, g);
  capacity(s, c, g);
  markers(s, c, g);
  if (c.times.empty())
    s += "<text class=\"empty\" x=\"" + num(g.width / 2) + "\" y=\"" + num(g.height / 2) +
         "\" text-anchor=\"middle\">no samples in this window</text>";
  s += "</svg>";
  return s;
}

}  // namespace gpureap::report

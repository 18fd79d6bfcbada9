#pragma once
// One GPU's chart as inline SVG: stacked bands of memory over time, the capacity as a dashed
// line, numbered markers for the moments the page lists under it, axes with units. No script,
// no external reference: the page opens offline and prints.
#include <string>
#include <vector>

#include "report/page.h"

namespace gpureap::report {

// Where values land: the one mapping the drawing and its tests share.
struct ChartGeometry {
  double width = 1200, height = 380;
  double left = 84, right = 24, top = 18, bottom = 52;
  TimePoint from, to;
  uint64_t y_max = 1;  // bytes at the top of the axis (a round number of the unit)
  uint64_t y_step = 1;
  uint64_t unit = 1;  // bytes per axis unit: GiB, or MiB on small GPUs
  const char* unit_name = "B";

  double x(TimePoint t) const;
  double y(uint64_t bytes) const;
};

ChartGeometry chart_geometry(const GpuChart& chart, TimePoint from, TimePoint to);

// The colours (Okabe-Ito, safe for colour-blind readers) the chart and the page's legend use.
std::string band_colour(const Band& band, size_t index);
std::string marker_colour(MarkerKind kind);
std::string band_fill(const Band& band, size_t index, unsigned gpu);  // a colour or a pattern

// Markers are numbered from 1 in their order, as the page's list under the chart numbers them.
std::string render_chart_svg(const GpuChart& chart, TimePoint from, TimePoint to);

}  // namespace gpureap::report

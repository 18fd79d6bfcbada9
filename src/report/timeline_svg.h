#pragma once
// A GPU's timeline as inline SVG, drawn under its chart on the same time axis (the chart's
// ChartGeometry): a lane per process that held the GPU, its spans alive, stopped (hatched
// amber) and as a ghost (hatched orange, as ghost memory is in the chart), and glyphs for its
// forks, exit, the moment it became a ghost, a leak, signals and who sent them, GPU errors and the
// memory coming back. Every lane and glyph carries an SVG <title>: the browser's hover.
#include <string>

#include "report/page.h"
#include "report/svg_chart.h"

namespace gpureap::report {

double timeline_height(const Timeline& timeline);
// Empty when the timeline has nothing to draw.
std::string render_timeline_svg(const Timeline& timeline, const ChartGeometry& geometry,
                                unsigned gpu);

}  // namespace gpureap::report

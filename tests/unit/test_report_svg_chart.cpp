// The drawn page: every series present, values where the geometry puts them, gaps break the
// bands, hostile names escaped, nothing fetched from anywhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "report/history_page.h"
#include "report/html_page.h"
#include "report/svg_chart.h"
#include "report_fixture.h"

namespace gpureap::report {
namespace {

using namespace gpureap::testing;

Page chart_page_of(const HistoryInput& in) {
  return build_history_page(in, {2, at_s(100)});
}

std::string point(double x, double y) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "L%.1f %.1f", x, y);
  return buf;
}

// The `d` of the band path with this data-series.
std::string band_path(const std::string& svg, const std::string& id) {
  auto at = svg.find("data-series=\"" + id + "\"");
  if (at == std::string::npos) return "";
  auto d = svg.find(" d=\"", at);
  return svg.substr(d + 4, svg.find('"', d + 4) - d - 4);
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(ReportSvgChart, EverySeriesIsDrawnWithItsValuesAtKnownSamples) {
  auto page = chart_page_of(report_input());
  const auto& c = page.gpus[0];
  const std::string svg = render_chart_svg(c, page.from, page.to);
  for (const auto& b : c.bands) EXPECT_NE(band_path(svg, b.id), "") << b.id;
  const auto g = chart_geometry(c, page.from, page.to);
  // Scaled to the data (24 GiB at most), a round number of GiB; the 80 GiB total is named above.
  EXPECT_EQ(g.y_max, 25 * kGiB);
  EXPECT_STREQ(g.unit_name, "GiB");
  EXPECT_NE(
      svg.find("class=\"capacity off-scale\" data-bytes=\"" + std::to_string(80 * kGiB) + "\""),
      std::string::npos);
  EXPECT_NE(svg.find("GPU total 80 GiB ↑ (above this scale)"), std::string::npos);
  // Drawn to the total when the data comes near it.
  auto full = c;
  full.total_bytes = 26 * kGiB;
  EXPECT_EQ(chart_geometry(full, page.from, page.to).y_max, 30 * kGiB);
  EXPECT_NE(render_chart_svg(full, page.from, page.to).find("capacity 26 GiB"), std::string::npos);
  // 100's band tops out at 10 GiB from t0 (a level run: its two ends alone are drawn); the ghost
  // band's top at t3 is 10+4+1+8 GiB, its bottom 15 GiB throughout.
  EXPECT_EQ(band_path(svg, "pid-100").rfind("M" + point(g.x(at_s(0)), g.y(10 * kGiB)).substr(1), 0),
            0u)
      << band_path(svg, "pid-100");
  EXPECT_NE(band_path(svg, "pid-100").find(point(g.x(at_s(9)), g.y(10 * kGiB))), std::string::npos);
  EXPECT_NE(band_path(svg, "ghost").find(point(g.x(at_s(3)), g.y(23 * kGiB))), std::string::npos);
  EXPECT_NE(band_path(svg, "ghost").find(point(g.x(at_s(0)), g.y(15 * kGiB))), std::string::npos);
  // The axes say their units.
  EXPECT_NE(svg.find("memory used (GiB)"), std::string::npos);
  EXPECT_NE(svg.find("time (UTC)"), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"marker "), 3u);
  char kill_x[32];
  std::snprintf(kill_x, sizeof kill_x, "%.1f", g.x(at_s(5.5)));
  EXPECT_NE(svg.find(std::string("data-kind=\"kill\" data-x=\"") + kill_x + "\""),
            std::string::npos);
}

TEST(ReportSvgChart, AGapInTheSamplesBreaksTheBands) {
  auto in = report_input();
  for (auto& p : in.history.gpus[0].points)
    if (p.time >= at_s(5)) p.time += std::chrono::minutes(5);
  auto page = chart_page_of(in);
  const std::string svg = render_chart_svg(page.gpus[0], page.from, page.to);
  EXPECT_EQ(count(band_path(svg, "unattributed"), "M"), 2u);
  EXPECT_EQ(count(band_path(svg, "pid-100"), "Z"), 2u);
}

TEST(ReportSvgChart, SmallGpusAreDrawnInMiB) {
  GpuChart c;
  c.total_bytes = 1536ull << 20;
  c.times = {at_s(0), at_s(1)};
  c.bands = {
      {BandKind::Unattributed, "unattributed", "unattributed", {100ull << 20, 200ull << 20}}};
  auto g = chart_geometry(c, at_s(0), at_s(1));
  EXPECT_STREQ(g.unit_name, "MiB");
  EXPECT_GE(g.y_max, 1536ull << 20);
  EXPECT_NE(render_chart_svg(c, at_s(0), at_s(1)).find("memory used (MiB)"), std::string::npos);
}

TEST(ReportHtmlPage, HostileNamesAreEscapedEverywhere) {
  const std::string html = render_html(chart_page_of(report_input()));
  std::string lower = html;
  std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
  EXPECT_EQ(lower.find("<script"), std::string::npos);
  // The name's label in the legend, its band's tooltip: quotes and brackets as references, the
  // escape character as the terminal's visible escape.
  EXPECT_GE(count(html, "200 &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&#39;\\x1b[31m"), 2u)
      << html.substr(0, 400);
  EXPECT_EQ(html.find('\x1b'), std::string::npos);
  EXPECT_NE(html.find("<title>GPU memory on node&lt;7&gt;</title>"), std::string::npos);
}

TEST(ReportHtmlPage, ThePageFetchesNothing) {
  const std::string html = render_html(chart_page_of(report_input()));
  // The SVG namespace is a name, not a fetch; nothing else names a place.
  EXPECT_EQ(count(html, "http"), count(html, "xmlns=\"http://www.w3.org/2000/svg\""));
  EXPECT_EQ(html.find(" src="), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
  EXPECT_EQ(count(html, "url("), count(html, "url(#"));
}

TEST(ReportHtmlPage, TheGhostTableAndTheMarkerListAreThere) {
  const std::string html = render_html(chart_page_of(report_input()));
  EXPECT_EQ(count(html, "<tr data-pid="), 3u);
  EXPECT_NE(html.find("killed by policy: policy `reap-ghosts`"), std::string::npos);
  EXPECT_NE(html.find("4250 python"), std::string::npos);
  EXPECT_NE(html.find("exited on its own"), std::string::npos);
  EXPECT_NE(html.find("class=\"ending-still-held\">still held"), std::string::npos);
  EXPECT_EQ(count(html, "<tr data-kind=\"kill\""), 1u);
  EXPECT_EQ(count(html, "<tr data-kind=\"xid\""), 2u);               // one list per GPU
  EXPECT_NE(html.find("2023-11-14 22:13:25.5"), std::string::npos);  // the kill, in tenths
  EXPECT_EQ(count(html, "<section class=\"gpu\""), 2u);
}

TEST(ReportHtmlPage, AGpuNoProcessUsedIsOneLineNotAnEmptyChart) {
  using namespace std::chrono_literals;
  Page page;
  page.title = "node";
  page.from = TimePoint{} + 1000s;
  page.to = page.from + 60s;
  GpuChart busy;
  busy.gpu = 0;
  busy.title = "GPU 0";
  busy.times = {page.from, page.from + 30s};
  busy.bands = {{BandKind::Process, "pid-1", "1 train", {4ull << 30, 4ull << 30}},
                {BandKind::Unattributed, "unattributed", "unattributed", {1ull << 30, 1ull << 30}}};
  GpuChart idle = busy;
  idle.gpu = 1;
  idle.title = "GPU 1";
  idle.total_bytes = 80ull << 30;
  idle.bands = {{BandKind::Process, "pid-2", "2 gone", {0, 0}},
                {BandKind::Unattributed, "unattributed", "unattributed", {1ull << 30, 2ull << 30}}};
  page.gpus = {busy, idle};
  std::string html = render_html(page);
  EXPECT_EQ(count(html, "<svg class=\"chart\""), 1u);
  EXPECT_NE(html.find("<section class=\"gpu\" data-gpu=\"0\">"), std::string::npos);
  EXPECT_NE(html.find("<section class=\"gpu idle\" data-gpu=\"1\"><h2>GPU 1</h2><p class=\"note\">"
                      "No process used it over the window; at most 2.0 GiB the driver attributes "
                      "to no process (of 80 GiB).</p></section>"),
            std::string::npos)
      << html;
  // A marker (a kill, a release) keeps the chart: something happened there.
  page.gpus[1].markers.push_back({page.from + 10s, MarkerKind::Release, "final close"});
  EXPECT_EQ(count(render_html(page), "<svg class=\"chart\""), 2u);
}

}  // namespace
}  // namespace gpureap::report

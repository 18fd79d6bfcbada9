// The report's incident parts: the lanes under each chart, who ended a ghost, the Now box, the
// headings, the y-axis scaled to the data, and the size of a day's page.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "report/html_page.h"
#include "report/incident.h"
#include "report/svg_chart.h"
#include "report_fixture.h"
#include "text/enum_names.h"

namespace gpureap::report {
namespace {

using testing::at_s;
using testing::kGiB;
using testing::kHostileName;

IncidentLane lane(pid_t pid, uint64_t start, const std::string& comm, double first, double last) {
  IncidentLane l;
  l.pid = pid;
  l.start_ticks = start;
  l.gpu = 0;
  l.comm = comm;
  l.user = "alice";
  l.first_seen = at_s(first);
  l.last_seen = at_s(last);
  l.open = false;
  return l;
}

IncidentEvent event(double t, const std::string& kind, pid_t pid, pid_t other = 0) {
  IncidentEvent e;
  e.at = at_s(t);
  auto named = text::enum_from_name<history::JournalEventKind>(kind);
  EXPECT_TRUE(named) << kind;
  if (named) e.kind = *named;
  e.gpu = 0;
  e.pid = pid;
  e.other = other;
  return e;
}

// The fixture's history with the journal of its ghost 4242: the trainer (alive, then a ghost
// from t2), its worker 4250 forked at t1 and ended by `gpureap kill 4242` at t5.2, whose final
// close at t5.3 gave the memory back at the t6 sample; a stopped job; a hostile name.
HistoryInput incident_input() {
  auto in = testing::report_input();
  in.audit.clear();  // no policy: the kill is a person's
  Incident inc;
  inc.gpus = {{0, "NVIDIA H100 80GB HBM3", "GPU-8f3a2c1e-1111-2222", 80 * kGiB},
              {1, kHostileName, "GPU-bbbb", 80 * kGiB}};
  auto trainer = lane(4242, 9000, "trainer", 0, 5);
  trainer.listed = true;
  trainer.exited = at_s(2);
  trainer.ghost = at_s(2);
  auto worker = lane(4250, 9001, "python", 1, 5);
  worker.keeper = true;
  worker.ppid = 4242;
  worker.exited = at_s(5.4);
  auto hostile = lane(200, 6000, kHostileName, 0, 9);
  hostile.listed = true;
  hostile.open = true;
  auto stopped = lane(300, 7000, "small", 0, 9);
  stopped.listed = true;
  stopped.open = true;
  stopped.stopped = true;
  inc.lanes = {trainer, worker, hostile, stopped};
  auto signal = event(5.2, "signal", 4250);
  signal.text = "SIGTERM";
  signal.uid = 0;
  signal.user = "root";
  signal.command = "gpureap kill 4242";
  inc.events = {
      event(1, "fork", 4242, 4250), event(2, "ghost", 4242),       signal,
      event(5.5, "exit", 4250),     event(6, "memory-back", 4242), event(4, "stopped", 300)};
  in.releases = {{"/dev/nvidia0", 4250, at_s(5.3)}};
  IncidentNow now;
  now.at = at_s(9);
  IncidentNowGpu g0;
  g0.gpu = 0;
  g0.state = "ghost";
  g0.used_bytes = 17 * kGiB;
  g0.total_bytes = 80 * kGiB;
  g0.ghost_bytes = 2 * kGiB;
  g0.stopped = {300};
  now.gpus.push_back(g0);
  now.problems.push_back({"critical", "GPU 0: 2.0 GiB held by gone PID 5151 " + kHostileName,
                          "gpureap kill --ghosts --gpu 0"});
  inc.now = now;
  in.incident = inc;
  return in;
}

Page incident_page() {
  return build_history_page(incident_input(), {5, at_s(10)});
}

TEST(ReportIncident, AGhostEndedByACommandSaysWhoWhenAndHowSoonTheMemoryCameBack) {
  auto page = incident_page();
  const GhostRow* row = nullptr;
  for (const auto& g : page.ghosts)
    if (g.pid == 4242) row = &g;
  ASSERT_TRUE(row);
  EXPECT_EQ(row->ending, GhostEnding::EndedByCommand);
  // The gone PID is named as it was while alive, not as the driver's record had it.
  EXPECT_EQ(row->comm, "trainer");
  EXPECT_EQ(row->ending_detail.rfind("`gpureap kill 4242` (root) at ", 0), 0u)
      << row->ending_detail;
  // The t6 sample is the first without the ghost: 700 ms after the worker's final close.
  EXPECT_NE(row->ending_detail.find("memory back 700 ms after the last keeper's final close"),
            std::string::npos)
      << row->ending_detail;
  const std::string html = render_html(page);
  EXPECT_NE(html.find("ended by `gpureap kill 4242` (root) at 22:13:25, memory back 700 ms"),
            std::string::npos);
}

TEST(ReportIncident, EachProcessHasALaneWithItsForksGhostAndTheSignalAndWhoSentIt) {
  auto page = incident_page();
  const auto& t = page.gpus[0].timeline;
  ASSERT_EQ(t.lanes.size(), 4u);
  auto lane_of = [&](pid_t pid) -> const Lane& {
    for (const auto& l : t.lanes)
      if (l.pid == pid) return l;
    ADD_FAILURE() << "no lane " << pid;
    return t.lanes[0];
  };
  const Lane& trainer = lane_of(4242);
  ASSERT_EQ(trainer.spans.size(), 2u);
  EXPECT_EQ(trainer.spans[0].kind, SpanKind::Alive);
  EXPECT_EQ(trainer.spans[0].to, at_s(2));
  EXPECT_EQ(trainer.spans[1].kind, SpanKind::Ghost);
  EXPECT_EQ(trainer.spans[1].to, at_s(5));
  const Lane* worker = nullptr;
  for (const auto& l : t.lanes)
    if (l.pid == 4250) worker = &l;
  ASSERT_TRUE(worker);
  bool signalled = false;
  for (const auto& m : worker->marks)
    if (m.kind == history::JournalEventKind::Signal) {
      signalled = true;
      EXPECT_NE(m.text.find("SIGTERM to PID 4250 by `gpureap kill 4242` (root)"), std::string::npos)
          << m.text;
    }
  EXPECT_TRUE(signalled);
  const Lane* stopped = nullptr;
  for (const auto& l : t.lanes)
    if (l.pid == 300) stopped = &l;
  ASSERT_TRUE(stopped);
  EXPECT_TRUE(stopped->stopped_now);
  EXPECT_EQ(stopped->spans.back().kind, SpanKind::Stopped);
  EXPECT_EQ(stopped->spans.back().from, at_s(4));
  // The stopped job's band says so too.
  bool labelled = false;
  for (const auto& b : page.gpus[0].bands) labelled |= b.label == "300 small (alice) (stopped)";
  EXPECT_TRUE(labelled);

  const std::string html = render_html(page);
  EXPECT_NE(html.find("<svg class=\"timeline\""), std::string::npos);
  EXPECT_NE(html.find("data-pid=\"4242\" data-spans=\"alive ghost\""), std::string::npos);
  EXPECT_NE(html.find("class=\"lane stopped-now\" data-pid=\"300\""), std::string::npos);
  // Names stay text in the lanes and their hovers.
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find('\x1b'), std::string::npos);
}

TEST(ReportIncident, TheNowBoxComesFirstWithEachProblemsCommand) {
  auto page = incident_page();
  ASSERT_TRUE(page.now);
  const std::string html = render_html(page);
  auto box = html.find("<section class=\"now\"");
  ASSERT_NE(box, std::string::npos);
  EXPECT_LT(box, html.find("<section class=\"gpu"));
  EXPECT_NE(html.find("<li data-gpu=\"0\" data-state=\"ghost\"><strong>GPU 0 · NVIDIA H100 80GB "
                      "HBM3</strong> <span class=\"state state-ghost\">ghost</span>"),
            std::string::npos);
  EXPECT_NE(html.find("17 GiB used of 80 GiB"), std::string::npos) << html.substr(box, 600);
  EXPECT_NE(html.find("stopped holder 300"), std::string::npos);
  EXPECT_NE(html.find("→ <code>gpureap kill --ghosts --gpu 0</code>"), std::string::npos);
  // A window that ends in the past has no "now".
  auto in = incident_input();
  in.until = at_s(5);
  EXPECT_FALSE(build_history_page(in, {5, at_s(10)}).now);
}

TEST(ReportIncident, ASplitGpusInstancesAreListedUnderItInTheNowBox) {
  // As the daemon sends them: the place, what the vendor calls it (untrusted), its memory.
  auto parsed = parse_incident(nlohmann::json::parse(R"({"gpus":[],"lanes":[],"events":[],
      "now":{"time":9,"problems":[],"gpus":[{"gpu":0,"state":"ghost","instances":[
        {"instance":"0/3","label":"MIG 3g.40gb","used_bytes":8589934592,
         "total_bytes":42949672960},
        {"instance":"0/5","label":"MIG 1g.10gb","used_bytes":null,"total_bytes":null}]}]}})"));
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  ASSERT_EQ(parsed->now->gpus[0].instances.size(), 2u);
  EXPECT_EQ(parsed->now->gpus[0].instances[0].place, "0/3");
  EXPECT_EQ(parsed->now->gpus[0].instances[0].used_bytes, 8 * kGiB);
  EXPECT_FALSE(parsed->now->gpus[0].instances[1].total_bytes);

  auto in = incident_input();
  in.incident->now->gpus[0].instances = {{"0/3", "MIG 3g.40gb", 8 * kGiB, 40 * kGiB},
                                         {"0/5", kHostileName, std::nullopt, std::nullopt}};
  const std::string html = render_html(build_history_page(in, {5, at_s(10)}));
  auto list =
      html.find("<ul class=\"now-instances\"><li>0/3 MIG 3g.40gb: 8.0 GiB used of 40 GiB</li>");
  EXPECT_NE(list, std::string::npos) << html.substr(html.find("<section class=\"now\""), 900);
  EXPECT_EQ(html.find("<script>alert"), std::string::npos) << "a label stays text";
  // The GPU's chart says it is split, and that its figures are the whole GPU's.
  EXPECT_NE(html.find("</h2><p class=\"note\">Split into instances now: 0/3 MIG 3g.40gb, 0/5 "
                      "&lt;script&gt;"),
            std::string::npos)
      << html.substr(html.find("<section class=\"gpu"), 400);
  // A daemon of before instances sends none: no list, and no chart says it is split.
  EXPECT_EQ(render_html(incident_page()).find("now-instances"), std::string::npos);
  EXPECT_EQ(render_html(incident_page()).find("Split into"), std::string::npos);
}

TEST(ReportIncident, HeadingsNameTheGpuAndTheAxisFitsTheData) {
  auto page = incident_page();
  EXPECT_EQ(page.gpus[0].title, "GPU 0 · NVIDIA H100 80GB HBM3 · GPU-aaaa");
  EXPECT_EQ(short_uuid("GPU-8f3a2c1e-1111-2222"), "GPU-8f3a2c1e");
  // 17 GiB at most on an 80 GiB GPU: the axis runs to 20, the total is named at the top.
  auto g = chart_geometry(page.gpus[0], page.from, page.to);
  EXPECT_LT(g.y_max, 30 * kGiB);
  EXPECT_GE(g.y_max, 17 * kGiB);
  const std::string svg = render_chart_svg(page.gpus[0], page.from, page.to);
  EXPECT_NE(svg.find("GPU total 80 GiB ↑ (above this scale)"), std::string::npos);
}

TEST(ReportIncident, AnIncidentOfTheWrongShapeIsRefusedNamingTheField) {
  auto bad = parse_incident(nlohmann::json::parse(
      R"({"gpus":[],"lanes":[{"pid":"x","gpu":0,"first_seen":1,"last_seen":2}],"events":[]})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("incident.lanes[0].pid"), std::string::npos);
}

// A day of history at one sample a second, with a busy journal: the page stays small enough
// to mail, because each chart draws one sample per column of time and a level run of memory
// as its two ends.
TEST(ReportIncident, ADayOfHistoryStaysSmall) {
  HistoryInput in;
  in.hostname = "node";
  in.since = testing::kReportT0;
  in.history.interval = std::chrono::seconds(1);
  in.history.window = std::chrono::hours(24);
  Incident inc;
  for (unsigned gpu = 0; gpu < 8; ++gpu) {
    history::GpuSeries s{gpu, "GPU-" + std::to_string(gpu), 80 * kGiB, {}};
    for (int t = 0; t < 86400; ++t)
      s.points.push_back(
          {at_s(t), (10 + (t / 600) % 40) * kGiB, kGiB, (t / 3600) % 3 ? 0 : 2 * kGiB, 50u, 4});
    in.history.gpus.push_back(std::move(s));
    inc.gpus.push_back({gpu, "NVIDIA H100 80GB HBM3", "GPU-" + std::to_string(gpu), {}});
    // A job an hour, each with four workers and a few events.
    for (int h = 0; h < 24; ++h) {
      pid_t pid = static_cast<pid_t>(10000 + gpu * 1000 + h * 10);
      history::ProcessTrack track;
      track.key = {pid, 1000u + static_cast<uint64_t>(h)};
      track.gpu = gpu;
      track.comm = "python";
      track.first_seen = at_s(h * 3600);
      track.last_seen = at_s(h * 3600 + 3000);
      for (int m = 0; m < 50; ++m)
        track.points.push_back({at_s(h * 3600 + m * 60), (8 + m % 5) * kGiB, 40u});
      in.history.processes.push_back(track);
      for (int w = 0; w < 5; ++w) {
        auto l = lane(pid + w, 1000u + static_cast<uint64_t>(h), w ? "worker" : "python",
                      h * 3600 + w, h * 3600 + 3000);
        l.gpu = gpu;
        inc.lanes.push_back(l);
        auto e = event(h * 3600 + 3000, "exit", pid + w);
        e.gpu = gpu;
        inc.events.push_back(e);
      }
    }
  }
  in.incident = inc;
  const std::string html = render_html(build_history_page(in, {5, at_s(86400)}));
  std::cout << "a 24-hour page of 8 GPUs: " << html.size() << " bytes\n";
  EXPECT_LT(html.size(), 1u << 20);
  // One GPU's day: what most pages are.
  in.history.gpus.resize(1);
  std::erase_if(in.history.processes, [](const auto& t) { return t.gpu != 0; });
  const std::string one = render_html(build_history_page(in, {5, at_s(86400)}));
  std::cout << "a 24-hour page of 1 GPU: " << one.size() << " bytes\n";
  EXPECT_LT(one.size(), 128u << 10);
}

}  // namespace
}  // namespace gpureap::report

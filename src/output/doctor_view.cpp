#include "output/doctor_view.h"

#include <fmt/format.h>

#include "core/gpu_place.h"
#include "doctor/fixable.h"
#include "text/byte_format.h"
#include "text/display_width.h"
#include "text/escape.h"
#include "text/plural.h"
#include "text/wrap.h"

namespace gpureap::output {
namespace {

Color color_of(doctor::Severity s) {
  return s == doctor::Severity::Critical  ? Color::Red
         : s == doctor::Severity::Warning ? Color::Yellow
                                          : Color::Dim;
}

std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// Writes paragraphs wrapped to the width, in the locale's characters.
class Page {
 public:
  Page(const Style& style, const DoctorTextOptions& o) : style_(style), o_(o) {}
  void text(std::string_view s, std::string_view first_prefix = "",
            std::string_view rest_prefix = "", Color c = Color::None) {
    std::string t(s), first(first_prefix), rest(rest_prefix);
    if (!o_.unicode) {
      t = text::ascii_only(t);
      first = text::ascii_only(first);
      rest = text::ascii_only(rest);
    }
    // Wrapped with the prefixes measured (a hanging indent under the bullet), then painted:
    // the prefixes stay unpainted.
    auto lines = text::wrap_paragraph(t, o_.width, first, rest);
    size_t start = 0;
    bool first_line = true;
    while (start < lines.size()) {
      size_t end = lines.find('\n', start);
      std::string_view line(lines.data() + start, end - start);
      const std::string& prefix = first_line ? first : rest;
      std::string_view body = line.substr(std::min(prefix.size(), line.size()));
      out_ += prefix + style_.paint(body, c) + "\n";
      first_line = false;
      start = end + 1;
    }
  }
  // `s`, then `tail` on its last line when it fits there, else on a line of its own: a command
  // is never split from its backticks across the end of a sentence.
  void text_with_tail(std::string_view s, std::string_view tail, std::string_view first,
                      std::string_view rest, Color c) {
    size_t before = out_.size();
    text(s, first, rest, c);
    if (tail.empty()) return;
    std::string t(tail);
    if (!o_.unicode) t = text::ascii_only(t);
    size_t last = out_.rfind('\n', out_.size() - 2);
    last = last == std::string::npos || last < before ? before : last + 1;
    size_t used = text::visible_width(std::string_view(out_).substr(last, out_.size() - 1 - last));
    if (o_.width == 0 || used + 1 + text::visible_width(t) <= o_.width) {
      out_.pop_back();
      out_ += " " + style_.paint(t, c) + "\n";
    } else {
      text(t, rest, rest, c);
    }
  }
  void blank() { out_ += "\n"; }
  std::string take() { return std::move(out_); }

 private:
  const Style& style_;
  const DoctorTextOptions& o_;
  std::string out_;
};

bool shown(const doctor::Finding& f, const DoctorTextOptions& o) {
  return o.verbose || f.severity != doctor::Severity::Info;
}

void summaries(Page& page, const std::vector<doctor::Finding>& findings) {
  size_t n = 0;
  for (const auto& f : findings) {
    if (f.severity == doctor::Severity::Info) continue;
    std::string number = fmt::format("{:>2}. ", ++n);
    std::string command =
        f.remedy.empty() ? "" : "— `" + text::terminal_safe(f.remedy.front().command) + "`";
    page.text_with_tail(text::terminal_safe(f.summary), command, number, "    ",
                        color_of(f.severity));
  }
}

void details(Page& page, const doctor::Finding& f, size_t number) {
  std::string head = fmt::format("{}{} {}", number ? fmt::format("{}. ", number) : "",
                                 upper(doctor::to_string(f.severity)), doctor::to_string(f.code));
  if (f.memory_bytes) head += " · " + text::human_bytes(f.memory_bytes);
  if (!f.gpus.empty()) head += fmt::format(" · GPU {}", fmt::join(f.gpus, ","));
  page.blank();
  page.text(head, "", "  ", color_of(f.severity));
  if (number == 0) page.text(text::terminal_safe(f.summary), "  ", "  ");
  for (const auto& e : f.evidence) page.text(text::terminal_safe(e), "  • ", "    ");
  for (const auto& x : f.facets)
    page.text(fmt::format("{} [{}]", text::terminal_safe(x.text), doctor::to_string(x.code)),
              "  ◦ ", "    ");
  if (!f.explanation.empty()) page.text(text::terminal_safe(f.explanation), "  ", "  ");
  for (const auto& step : f.remedy) {
    std::string label = fmt::format("  {:<6}", std::string(doctor::to_string(step.kind)) + ":");
    page.text(text::terminal_safe(step.command), label, "        ", Color::Bold);
    if (!step.why.empty())
      page.text(text::terminal_safe(step.why), "        ", "        ", Color::Dim);
  }
}

}  // namespace

std::string render_doctor_summaries(const std::vector<doctor::Finding>& findings,
                                    const Style& style, const DoctorTextOptions& o) {
  Page page(style, o);
  summaries(page, findings);
  return page.take();
}

std::string render_doctor(const core::Snapshot& s, const std::vector<doctor::Finding>& findings,
                          const Style& style, const DoctorTextOptions& o) {
  Page page(style, o);
  size_t problems = 0, hidden = 0;
  for (const auto& f : findings) {
    problems += f.severity != doctor::Severity::Info;
    hidden += !shown(f, o);
  }
  if (problems == 0) {
    size_t rows = 0;
    for (const auto& r : s.rows)
      rows += !o.gpu || core::in_place(s, r, o.instance.value_or(core::GpuPlace{*o.gpu}));
    std::string gpus =
        o.gpu ? "GPU " + core::gpu_place_text(o.instance.value_or(core::GpuPlace{*o.gpu}))
              : text::plural(s.drivers.gpus.size(), "GPU");
    page.text(style.paint("Healthy", Color::Green) +
              fmt::format(": {}, {} holding {}, nothing above info.", gpus,
                          text::plural(rows, "process"), o.gpu ? "it" : "GPUs"));
  } else {
    size_t critical = 0;
    for (const auto& f : findings) critical += f.severity == doctor::Severity::Critical;
    std::string counts =
        critical == 0 || critical == problems ? "" : fmt::format(" ({} critical)", critical);
    page.text(fmt::format("{} need{} attention{}:", text::plural(problems, "problem"),
                          problems == 1 ? "s" : "", counts));
    summaries(page, findings);
    if (!o.fixing && !doctor::fixable(findings).empty())
      page.text("`gpureap doctor --fix` applies the safe remedies (it shows the plan first).");
  }
  size_t number = 0;
  for (const auto& f : findings) {
    if (!shown(f, o)) continue;
    bool problem = f.severity != doctor::Severity::Info;
    details(page, f, problem ? ++number : 0);
  }
  if (hidden > 0) {
    page.blank();
    page.text(style.paint(
        fmt::format("{} hidden; -v shows {}.", text::plural(hidden, "informational finding"),
                    hidden == 1 ? "it" : "them"),
        Color::Dim));
  }
  return page.take();
}

}  // namespace gpureap::output

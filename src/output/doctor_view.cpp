#include "output/doctor_view.h"

#include <fmt/format.h>

#include "output/snapshot_json.h"
#include "text/byte_format.h"
#include "text/escape.h"

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

}  // namespace

std::string render_doctor(const core::Snapshot& s, const std::vector<doctor::Finding>& findings,
                          const Style& style, std::optional<unsigned> gpu) {
  std::string out;
  if (doctor::worst(findings) == doctor::Severity::Info) {
    size_t rows = 0;
    for (const auto& r : s.rows) rows += !gpu || s.on_gpu(r, *gpu);
    std::string gpus =
        gpu ? fmt::format("GPU {}", *gpu)
            : fmt::format("{} GPU{}", s.drivers.gpus.size(), s.drivers.gpus.size() == 1 ? "" : "s");
    out += style.paint("Healthy", Color::Green) +
           fmt::format(": {}, {} process{} holding {}, nothing above info.\n", gpus, rows,
                       rows == 1 ? "" : "es", gpu ? "it" : "GPUs");
  }
  for (const auto& f : findings) {
    std::string head =
        fmt::format("{:<8} {}", upper(doctor::to_string(f.severity)), doctor::to_string(f.code));
    if (f.memory_bytes) head += " · " + text::human_bytes(f.memory_bytes);
    if (!f.gpus.empty()) head += fmt::format(" · GPU {}", fmt::join(f.gpus, ","));
    out += "\n" + style.paint(head, color_of(f.severity)) + "\n";
    for (const auto& e : f.evidence) out += "  • " + text::terminal_safe(e) + "\n";
    if (!f.explanation.empty()) out += "  " + text::terminal_safe(f.explanation) + "\n";
    for (const auto& r : f.remedy)
      out += "  " + style.paint("$ " + text::terminal_safe(r), Color::Bold) + "\n";
  }
  auto worst = doctor::worst(findings);
  if (worst != doctor::Severity::Info) {
    size_t n = 0;
    for (const auto& f : findings) n += f.severity != doctor::Severity::Info;
    out += fmt::format(
        "\n{} finding{} need{} attention. `gpureap doctor --fix` applies the safe remedies "
        "(it shows the plan first).\n",
        n, n == 1 ? "" : "s", n == 1 ? "s" : "");
  }
  return out;
}

nlohmann::json doctor_to_json(const core::Snapshot& s,
                              const std::vector<doctor::Finding>& findings) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& f : findings)
    list.push_back({{"code", doctor::to_string(f.code)},
                    {"severity", doctor::to_string(f.severity)},
                    {"gpus", f.gpus},
                    {"pids", f.pids},
                    {"memory_bytes", f.memory_bytes},
                    {"evidence", f.evidence},
                    {"explanation", f.explanation},
                    {"remedy", f.remedy}});
  return {{"schema", kDoctorSchema},
          {"snapshot", snapshot_to_json(s)},
          {"findings", list},
          {"worst_severity", doctor::to_string(doctor::worst(findings))}};
}

}  // namespace gpureap::output

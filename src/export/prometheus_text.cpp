#include "export/prometheus_text.h"

#include <fmt/format.h>

#include <cmath>

#include "text/escape.h"

namespace gpureap::exporter {
namespace {

bool name_char(char c, bool first, bool colon_ok) {
  bool alpha =
      (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon_ok && c == ':');
  return alpha || (!first && c >= '0' && c <= '9');
}

bool valid_name(std::string_view name, bool colon_ok) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i)
    if (!name_char(name[i], i == 0, colon_ok)) return false;
  return true;
}

}  // namespace

std::string escape_label_value(std::string_view value) {
  // Prometheus rejects a whole scrape whose label values are not UTF-8.
  std::string valid = text::utf8_valid(value);
  std::string out;
  out.reserve(valid.size());
  for (char c : valid) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string escape_help(std::string_view help) {
  std::string valid = text::utf8_valid(help);
  std::string out;
  out.reserve(valid.size());
  for (char c : valid) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string format_value(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  // Byte counts are integers; print them without an exponent while a double holds them exactly.
  constexpr double kExact = 9007199254740992.0;  // 2^53
  if (value == std::floor(value) && std::fabs(value) < kExact)
    return fmt::format("{}", static_cast<long long>(value));
  return fmt::format("{}", value);
}

bool valid_metric_name(std::string_view name) {
  return valid_name(name, true);
}

bool valid_label_name(std::string_view name) {
  // Names starting with "__" are reserved for Prometheus itself.
  return valid_name(name, false) && name.substr(0, 2) != "__";
}

void render_into(std::string& out, const MetricFamily& family) {
  if (!valid_metric_name(family.name)) return;
  out += "# HELP ";
  out += family.name;
  out += ' ';
  out += escape_help(family.help);
  out += "\n# TYPE ";
  out += family.name;
  out += family.type == MetricType::Counter ? " counter\n" : " gauge\n";
  for (const auto& sample : family.samples) {
    std::string line = family.name;
    bool ok = true;
    if (!sample.labels.empty()) {
      line += '{';
      for (size_t i = 0; i < sample.labels.size(); ++i) {
        const auto& label = sample.labels[i];
        if (!valid_label_name(label.name)) {
          ok = false;
          break;
        }
        if (i) line += ',';
        line += label.name;
        line += "=\"";
        line += escape_label_value(label.value);
        line += '"';
      }
      line += '}';
    }
    if (!ok) continue;
    line += ' ';
    line += format_value(sample.value);
    line += '\n';
    out += line;
  }
}

std::string render(const std::vector<MetricFamily>& families) {
  std::string out;
  for (const auto& family : families) render_into(out, family);
  return out;
}

}  // namespace gpureap::exporter

#pragma once
// The Prometheus text exposition format, version 0.0.4: a pure serializer. Every label value
// and help text goes through it, so untrusted text (process names, users, container ids)
// can never break a scrape or forge a series.
//
// The namespace is `exporter` because `export` is a C++ keyword.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpureap::exporter {

inline constexpr const char* kPrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";

enum class MetricType { Gauge, Counter };

struct Label {
  std::string name;   // [a-zA-Z_][a-zA-Z0-9_]*, chosen by gpureap
  std::string value;  // anything: escaped on output
};

struct Sample {
  std::vector<Label> labels;
  double value = 0;
};

// One metric: its HELP and TYPE lines and its samples. A family with no samples is still
// written (HELP and TYPE only), so the metric's meaning is discoverable before it has data.
struct MetricFamily {
  std::string name;
  std::string help;
  MetricType type = MetricType::Gauge;
  std::vector<Sample> samples;

  MetricFamily& add(std::vector<Label> labels, double value) {
    samples.push_back({std::move(labels), value});
    return *this;
  }
};

// A label value for the text format: valid UTF-8 (invalid bytes become U+FFFD, which
// Prometheus requires), then backslash, double quote and newline escaped.
std::string escape_label_value(std::string_view value);
// A HELP text: backslash and newline escaped.
std::string escape_help(std::string_view help);
// Shortest exact text for a sample value: integers without exponent up to 2^53, "NaN",
// "+Inf", "-Inf".
std::string format_value(double value);
// Metric and label names gpureap writes must match the format's grammar.
bool valid_metric_name(std::string_view name);
bool valid_label_name(std::string_view name);

// The whole exposition. Families and labels whose names are invalid are a programming error:
// they are skipped, so one bad name never breaks the rest of the scrape.
std::string render(const std::vector<MetricFamily>& families);
void render_into(std::string& out, const MetricFamily& family);

}  // namespace gpureap::exporter

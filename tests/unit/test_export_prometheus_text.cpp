#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <sstream>

#include "export/prometheus_text.h"

namespace gpureap::exporter {
namespace {

// The line grammar of the text format 0.0.4 for samples with labels (no timestamps).
bool valid_sample_line(const std::string& line) {
  static const std::regex re(
      R"(^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\[\\"n])*")(,[a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\[\\"n])*")*\})? (-?[0-9.e+]+|NaN|\+Inf|-Inf)$)");
  return std::regex_match(line, re);
}

TEST(ExportPrometheusText, EscapesBackslashQuoteAndNewlineInLabelValues) {
  EXPECT_EQ(escape_label_value(R"(a\b)"), R"(a\\b)");
  EXPECT_EQ(escape_label_value(R"(say "hi")"), R"(say \"hi\")");
  EXPECT_EQ(escape_label_value("two\nlines"), R"(two\nlines)");
  EXPECT_EQ(escape_label_value("plain text, tabs\tand {braces}"), "plain text, tabs\tand {braces}");
  EXPECT_EQ(escape_label_value(""), "");
}

TEST(ExportPrometheusText, InvalidUtf8BecomesReplacementCharacter) {
  // Prometheus rejects the whole scrape when one label value is not UTF-8.
  EXPECT_EQ(escape_label_value("py\xff\xfe"), "py\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(escape_label_value("caf\xC3\xA9"), "caf\xC3\xA9");
}

TEST(ExportPrometheusText, HelpEscapesBackslashAndNewlineButNotQuotes) {
  EXPECT_EQ(escape_help("a \"quoted\" \\ word\nnext"), "a \"quoted\" \\\\ word\\nnext");
}

TEST(ExportPrometheusText, ValuesAreExactAndSpecialValuesUseTheFormatsNames) {
  EXPECT_EQ(format_value(0), "0");
  EXPECT_EQ(format_value(85899345920.0), "85899345920");
  EXPECT_EQ(format_value(-3), "-3");
  EXPECT_EQ(format_value(0.87), "0.87");
  EXPECT_EQ(format_value(1.0 / 0.0), "+Inf");
  EXPECT_EQ(format_value(-1.0 / 0.0), "-Inf");
  EXPECT_EQ(format_value(std::nan("")), "NaN");
  // Beyond 2^53 a double is not an exact integer: shortest round-trip text instead.
  EXPECT_EQ(std::stod(format_value(1e20)), 1e20);
}

TEST(ExportPrometheusText, RendersHelpTypeAndSamples) {
  std::vector<MetricFamily> families;
  families.push_back(MetricFamily{"gpureap_up", "1 when up"}.add({}, 1));
  MetricFamily errors{"gpureap_collect_errors_total", "errors", MetricType::Counter};
  errors.add({{"collector", "driver"}}, 2).add({{"collector", "holder_scan"}}, 0);
  families.push_back(errors);
  families.push_back(MetricFamily{"gpureap_empty", "no samples yet"});
  EXPECT_EQ(render(families),
            "# HELP gpureap_up 1 when up\n"
            "# TYPE gpureap_up gauge\n"
            "gpureap_up 1\n"
            "# HELP gpureap_collect_errors_total errors\n"
            "# TYPE gpureap_collect_errors_total counter\n"
            "gpureap_collect_errors_total{collector=\"driver\"} 2\n"
            "gpureap_collect_errors_total{collector=\"holder_scan\"} 0\n"
            "# HELP gpureap_empty no samples yet\n"
            "# TYPE gpureap_empty gauge\n");
}

TEST(ExportPrometheusText, HostileProcessNamesCannotForgeSeries) {
  // A process can name itself anything; one that tries to end the label value and start a
  // line of its own stays inside its label value.
  MetricFamily f{"gpureap_process_memory_bytes", "memory"};
  f.add({{"pid", "42"}, {"comm", "x\"} 1\ngpureap_up{a=\"0"}}, 5);
  f.add({{"comm", "back\\slash\\"}}, 6);
  f.add({{"comm", "\xff\n\"\\"}}, 7);
  std::string text = render({f});
  std::istringstream in(text);
  std::string line;
  int samples = 0;
  while (std::getline(in, line)) {
    if (line.rfind('#', 0) == 0) continue;
    ++samples;
    EXPECT_TRUE(valid_sample_line(line)) << line;
    EXPECT_EQ(line.rfind("gpureap_process_memory_bytes{", 0), 0u) << line;
  }
  EXPECT_EQ(samples, 3);
  EXPECT_NE(text.find(R"(comm="x\"} 1\ngpureap_up{a=\"0"} 5)"), std::string::npos) << text;
}

TEST(ExportPrometheusText, InvalidNamesAreSkippedNotWritten) {
  EXPECT_TRUE(valid_metric_name("gpureap_up"));
  EXPECT_TRUE(valid_metric_name("ns:metric"));
  EXPECT_FALSE(valid_metric_name("9lives"));
  EXPECT_FALSE(valid_metric_name("has-dash"));
  EXPECT_FALSE(valid_metric_name(""));
  EXPECT_TRUE(valid_label_name("gpu"));
  EXPECT_FALSE(valid_label_name("__name__"));
  EXPECT_FALSE(valid_label_name("a:b"));
  MetricFamily bad_family{"bad name", "x"};
  bad_family.add({}, 1);
  MetricFamily bad_label{"gpureap_x", "x"};
  bad_label.add({{"bad-label", "v"}}, 1).add({{"good", "v"}}, 2);
  std::string text = render({bad_family, bad_label});
  EXPECT_EQ(text.find("bad name"), std::string::npos);
  EXPECT_EQ(text.find("bad-label"), std::string::npos);
  EXPECT_NE(text.find("gpureap_x{good=\"v\"} 2\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace gpureap::exporter

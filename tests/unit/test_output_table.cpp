// The text table and prose at a width (src/output/table.cpp): every line fits; columns drop,
// fold under their row or shrink in the order given before the last column goes below what it
// must keep; notes and prose wrap between words and never inside a `command`.
#include <gtest/gtest.h>

#include <sstream>

#include "output/table.h"
#include "text/display_width.h"
#include "text_lines.h"

namespace gpureap::output {
namespace {

using testing::lines_of;

Table plan_like() {
  Table t({"PID", "USER", "WHY", "COMMAND"});
  t.add({{"4250"},
         {"a-very-long-user-name"},
         {"inherited holder of gone PID 4242; orphan (its job is gone)"},
         {"python3 train.py (pt_data_worker) --epochs 90"}});
  t.add({{"4251"}, {"bob"}, {""}, {"python3 eval.py"}});
  t.drop_when_narrow({}, 24);
  t.shrink_when_narrow("USER", 8);
  t.fold_when_narrow("WHY", "why");
  return t;
}

TEST(Table, NarrowingShrinksThenFoldsAndKeepsTheLastColumn) {
  auto t = plan_like();
  // Wide enough: one line a row, nothing cut.
  auto wide = t.render(Style(false), 200);
  EXPECT_EQ(lines_of(wide).size(), 3u) << wide;
  EXPECT_EQ(wide.find("…"), std::string::npos) << wide;
  for (size_t width : {80u, 60u, 40u}) {
    auto text = t.render(Style(false), width);
    auto lines = lines_of(text);
    for (const auto& l : lines) EXPECT_LE(text::text_width(l), width) << width << ": " << l;
    EXPECT_NE(lines[0].find("COMMAND"), std::string::npos) << text;
    EXPECT_EQ(lines[0].find("WHY"), std::string::npos) << text;   // folded
    EXPECT_NE(text.find("a-very-…"), std::string::npos) << text;  // cut to its 8 columns
    // The reasons are under their row, whole (wrapped between words), indented past the PID.
    EXPECT_EQ(lines[2].find("      why: inherited holder"), 0u) << text;
    EXPECT_NE(text.find("python3 train.py"), std::string::npos) << text;
    // An empty cell folds into no line.
    EXPECT_EQ(lines.back().find("4251"), 0u) << text;
  }
}

TEST(Table, WithoutAWidthNothingIsCutOrFolded) {
  auto text = plan_like().render(Style(false), std::nullopt);
  EXPECT_EQ(text.find("…"), std::string::npos);
  EXPECT_NE(text.find("WHY"), std::string::npos);
  EXPECT_NE(text.find("a-very-long-user-name"), std::string::npos);
}

TEST(Table, TooNarrowForAnyTableStillFits) {
  Table t({"A", "B"});
  t.add({{std::string(50, 'a')}, {"b"}});
  for (size_t width : {10u, 30u}) {
    auto text = t.render(Style(false), width);
    for (const auto& l : lines_of(text)) EXPECT_LE(text::text_width(l), width) << l;
  }
}

TEST(Table, NotesWrapUnderTheirColumn) {
  Table t({"GPU", "NAME", "MEMORY"});
  t.add({{"0"}, {"H200"}, {"8/140 GiB"}});
  t.add_note(2, {"attributed 40 GiB · ghost 8.0 GiB · unattributed 1.0 GiB · and more words"});
  auto lines = lines_of(t.render(Style(false), 40));
  ASSERT_GE(lines.size(), 4u);
  for (const auto& l : lines) EXPECT_LE(text::text_width(l), 40u) << l;
  EXPECT_EQ(lines[2].find("           attributed"), 0u) << lines[2];
  EXPECT_EQ(lines[3].find("           "), 0u) << lines[3];
}

TEST(WrapText, BetweenWordsAndNeverInsideACommand) {
  std::string text =
      "8.0 GiB on GPU 0 is held by ghosts (1 process keeps it alive). `gpureap doctor` explains; "
      "`gpureap kill 4242 4243` frees it.";
  for (size_t width : {30u, 40u, 80u}) {
    auto lines = lines_of(wrap_text(text, width));
    std::string joined;
    for (const auto& l : lines) {
      EXPECT_LE(text::text_width(l), width) << l;
      EXPECT_FALSE(l.starts_with(" ") || l.ends_with(" ")) << l;
      joined += (joined.empty() ? "" : " ") + l;
    }
    EXPECT_EQ(joined, text);
    bool whole = false;
    for (const auto& l : lines) whole |= l.find("`gpureap kill 4242 4243`") != std::string::npos;
    EXPECT_TRUE(whole) << wrap_text(text, width);
  }
  EXPECT_EQ(wrap_text(text, std::nullopt), text + "\n");
  EXPECT_EQ(wrap_text("one\ntwo words", 5), "one\ntwo\nwords\n");
}

TEST(FitWidth, TheTerminalElseColumns) {
  EXPECT_EQ(fit_width(100, "80"), 100u);
  EXPECT_EQ(fit_width(std::nullopt, "80"), 80u);
  EXPECT_EQ(fit_width(std::nullopt, nullptr), std::nullopt);
  EXPECT_EQ(fit_width(std::nullopt, ""), std::nullopt);
  EXPECT_EQ(fit_width(std::nullopt, "0"), std::nullopt);
  EXPECT_EQ(fit_width(std::nullopt, "80x"), std::nullopt);
  EXPECT_EQ(fit_width(std::nullopt, "-1"), std::nullopt);
}

}  // namespace
}  // namespace gpureap::output

// Paragraphs wrapped at word boundaries to a terminal's width, colour and wide characters
// measured as a terminal shows them.
#include <gtest/gtest.h>

#include <sstream>

#include "text/display_width.h"
#include "text/wrap.h"
#include "text_lines.h"

namespace gpureap::text {
namespace {

using testing::lines_of;

// Every word of `text` appears whole on one of the lines.
void expect_whole_words(const std::string& text, const std::string& wrapped) {
  std::istringstream words(text);
  auto lines = lines_of(wrapped);
  for (std::string w; words >> w;) {
    bool whole = std::any_of(lines.begin(), lines.end(), [&](const std::string& l) {
      std::istringstream in(l);
      for (std::string x; in >> x;)
        if (x == w) return true;
      return false;
    });
    EXPECT_TRUE(whole) << "\"" << w << "\" was cut:\n" << wrapped;
  }
}

const std::string kProse =
    "The process that created this GPU context is gone, but one process still holds its "
    "device files (inherited when it forked), so the driver cannot free the memory.";

TEST(TextWrap, BreaksOnlyAtSpacesWithAHangingIndent) {
  for (size_t width : {20u, 33u, 40u, 80u}) {
    auto out = wrap_paragraph(kProse, width, "  • ", "    ");
    for (const auto& l : lines_of(out)) EXPECT_LE(visible_width(l), width) << l;
    expect_whole_words(kProse, out);
    auto lines = lines_of(out);
    EXPECT_EQ(lines.front().rfind("  • ", 0), 0u);
    for (size_t i = 1; i < lines.size(); ++i) {
      EXPECT_EQ(lines[i].rfind("    ", 0), 0u) << lines[i];
      EXPECT_NE(lines[i][4], ' ') << "continuation text starts under the bullet's text";
    }
  }
  EXPECT_EQ(wrap_paragraph("one two three", 9, "", ""), "one two\nthree\n");
}

TEST(TextWrap, WidthZeroIsAPipe) {
  EXPECT_EQ(wrap_paragraph(kProse, 0, "  ", "    "), "  " + kProse + "\n");
}

TEST(TextWrap, OnlyAWordWiderThanALineIsCut) {
  auto out = wrap_paragraph("rm /dev/shm/a-very-long-file-name-indeed now", 16, "", "  ");
  for (const auto& l : lines_of(out)) EXPECT_LE(visible_width(l), 16u) << out;
  EXPECT_EQ(lines_of(out).front(), "rm");
  EXPECT_NE(out.find("now"), std::string::npos);
}

TEST(TextWrap, ColourEscapesTakeNoColumns) {
  std::string red = "\x1b[31m", reset = "\x1b[0m";
  std::string text = red + "CRITICAL" + reset + " no-such-process " + red + "8.0 GiB" + reset;
  EXPECT_EQ(visible_width(text), text_width("CRITICAL no-such-process 8.0 GiB"));
  // It fits 33 columns once the escapes are not counted: one line, escapes intact.
  EXPECT_EQ(wrap_paragraph(text, 33, "", ""), text + "\n");
  auto cut = wrap_paragraph(text, 20, "", "");
  for (const auto& l : lines_of(cut)) EXPECT_LE(visible_width(l), 20u);
  EXPECT_NE(cut.find(red + "8.0"), std::string::npos);
}

TEST(TextWrap, WideCharactersTakeTwoColumns) {
  std::string name = "训练任务 训练任务 训练任务";  // three words of 8 columns
  auto out = wrap_paragraph(name, 17, "", "");
  auto lines = lines_of(out);
  ASSERT_EQ(lines.size(), 2u) << out;
  EXPECT_EQ(lines[0], "训练任务 训练任务");
  for (const auto& l : lines) EXPECT_LE(visible_width(l), 17u);
  // A wide word cut because it fits no line is cut between characters, never inside one.
  auto cut = wrap_paragraph("训练任务训练任务", 5, "", "");
  for (const auto& l : lines_of(cut)) {
    EXPECT_LE(visible_width(l), 5u);
    EXPECT_EQ(visible_width(l) % 2, 0u) << l;
  }
}

}  // namespace
}  // namespace gpureap::text

TEST(TextWrap, ACommandInBackquotesStaysOnOneLineWhenItFits) {
  auto lines = gpureap::text::wrap("8.0 GiB is held: `gpureap kill 4242` frees it", 24);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "8.0 GiB is held:");
  EXPECT_EQ(lines[1], "`gpureap kill 4242`");
  EXPECT_EQ(lines[2], "frees it");
  // One that fits no line breaks at its own spaces, never inside a word.
  for (const auto& l : gpureap::text::wrap("run `gpureap kill --ghosts --gpu 0 --yes`", 12))
    EXPECT_LE(gpureap::text::visible_width(l), 12u) << l;
  EXPECT_EQ(gpureap::text::wrap("`a b` c", 0), std::vector<std::string>{});
}

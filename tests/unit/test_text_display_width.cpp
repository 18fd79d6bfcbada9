#include <gtest/gtest.h>

#include <iterator>
#include <vector>

#include "text/display_width.h"
#include "text/width_table.h"
#include "text/wrap.h"

namespace gpureap::text {
namespace {

TEST(TextDisplayWidth, WidthCountsColumnsNotBytes) {
  EXPECT_EQ(text_width("abc"), 3u);
  EXPECT_EQ(text_width("█▒░"), 3u);  // block elements: one column each, three bytes
  EXPECT_EQ(text_width("61°C"), 4u);
  EXPECT_EQ(text_width("日本"), 4u);       // wide
  EXPECT_EQ(text_width("e\xcc\x81"), 1u);  // e + combining acute
  EXPECT_EQ(text_width("\xff"), 1u);       // an invalid byte still takes a column
}

// As a terminal draws them (the C library's wcwidth): every emoji drawn as a picture takes two
// columns, not only the first blocks of them; the marks of Indic and other scripts take none.
TEST(TextDisplayWidth, EmojiTakeTwoColumnsAndMarksNone) {
  EXPECT_EQ(text_width("\U0001F680"), 2u);                             // 🚀 ROCKET
  EXPECT_EQ(text_width("\u231A\u2615\u26A1\u2705\u274C\u2B50"), 12u);  // ⌚☕⚡✅❌⭐
  EXPECT_EQ(text_width("\U0001F7E0\U0001FA70\U0001FAE0"), 6u);
  EXPECT_EQ(text_width("\U0001F600"), 2u);
  EXPECT_EQ(text_width("\u2764"), 1u);  // ❤ is drawn as text unless a selector asks otherwise
  EXPECT_EQ(text_width("\u0915\u093F"), 2u);        // क ि: a spacing vowel sign
  EXPECT_EQ(text_width("\u0915\u0941"), 1u);        // कु: a nonspacing one
  EXPECT_EQ(text_width("\u0E01\u0E34"), 1u);        // Thai
  EXPECT_EQ(text_width("\u1100\u1161\u11A8"), 2u);  // a Hangul syllable of jamo
  EXPECT_EQ(text_width("\U00020000\U00030000"), 4u);
  EXPECT_EQ(text_width("\u00AD"), 1u);  // the soft hyphen is drawn
  EXPECT_EQ(fit("\U0001F680\U0001F680\U0001F680", 5), "\U0001F680\U0001F680…");
}

// The generated tables are what the lookup's binary search needs: sorted, disjoint ranges.
TEST(TextDisplayWidth, WidthTablesAreSortedAndDisjoint) {
  for (const auto& table :
       {std::vector<WidthRange>(std::begin(kZeroWidth), std::end(kZeroWidth)),
        std::vector<WidthRange>(std::begin(kDoubleWidth), std::end(kDoubleWidth))}) {
    for (size_t i = 0; i < table.size(); ++i) {
      EXPECT_LE(table[i].first, table[i].last) << i;
      if (i > 0) {
        EXPECT_LT(table[i - 1].last, table[i].first) << i;
      }
    }
  }
}

TEST(TextDisplayWidth, FitCutsWithAnEllipsisAndNeverSplitsACharacter) {
  EXPECT_EQ(fit("python train.py", 20), "python train.py");
  EXPECT_EQ(fit("python train.py", 8), "python …");
  EXPECT_EQ(text_width(fit("python train.py", 8)), 8u);
  EXPECT_EQ(fit("日本語", 4), "日… ");  // the second wide char does not fit beside the ellipsis
  EXPECT_EQ(text_width(fit("日本語", 4)), 4u);
  EXPECT_EQ(fit("abcdef", 3, "~"), "ab~");
  EXPECT_EQ(pad_right("ab", 4), "ab  ");
  EXPECT_EQ(pad_left("ab", 4), "  ab");
  EXPECT_EQ(pad_left("abcdef", 4), "abc…");
}

TEST(TextDisplayWidth, ColumnsTakesAColumnRange) {
  EXPECT_EQ(columns("abcdef", 2, 4), "cd");
  EXPECT_EQ(columns("a日b", 0, 2), "a ");  // half a wide character becomes a space
  EXPECT_EQ(columns("a日b", 1, 4), "日b");
  EXPECT_EQ(columns("abc", 5, 9), "");
}

TEST(TextDisplayWidth, WrapBreaksAtSpacesAndCutsLongWords) {
  EXPECT_EQ(wrap("the quick brown fox", 9), (std::vector<std::string>{"the quick", "brown fox"}));
  EXPECT_EQ(wrap("abcdefghij", 4), (std::vector<std::string>{"abcd", "efgh", "ij"}));
  EXPECT_EQ(wrap("", 10), (std::vector<std::string>{""}));
  for (const auto& l :
       wrap("PID 4250 (pt_data_worker) holds /dev/nvidia0 on fd 7; its parent is 1", 20))
    EXPECT_LE(text_width(l), 20u) << l;
}

TEST(TextDisplayWidth, AsciiOnlyForTerminalsWithoutUtf8) {
  EXPECT_EQ(ascii_only("a…b·c"), "a~b-c");
  EXPECT_EQ(ascii_only("x — • →"), "x - * >");
  EXPECT_EQ(ascii_only("61°C"), "61?C");
  EXPECT_EQ(ascii_only("日"), "??");  // keeps the column count
}

}  // namespace
}  // namespace gpureap::text

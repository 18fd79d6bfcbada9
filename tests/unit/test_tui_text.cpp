#include <gtest/gtest.h>

#include "tui/frame.h"
#include "tui/text.h"
#include "tui/watch.h"

namespace gpureap::tui {
namespace {

TEST(TuiText, WidthCountsColumnsNotBytes) {
  EXPECT_EQ(text_width("abc"), 3u);
  EXPECT_EQ(text_width("█▒░"), 3u);  // block elements: one column each, three bytes
  EXPECT_EQ(text_width("61°C"), 4u);
  EXPECT_EQ(text_width("日本"), 4u);       // wide
  EXPECT_EQ(text_width("e\xcc\x81"), 1u);  // e + combining acute
  EXPECT_EQ(text_width("\xff"), 1u);       // an invalid byte still takes a column
}

TEST(TuiText, FitCutsWithAnEllipsisAndNeverSplitsACharacter) {
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

TEST(TuiText, ColumnsTakesAColumnRange) {
  EXPECT_EQ(columns("abcdef", 2, 4), "cd");
  EXPECT_EQ(columns("a日b", 0, 2), "a ");  // half a wide character becomes a space
  EXPECT_EQ(columns("a日b", 1, 4), "日b");
  EXPECT_EQ(columns("abc", 5, 9), "");
}

TEST(TuiText, WrapBreaksAtSpacesAndCutsLongWords) {
  EXPECT_EQ(wrap("the quick brown fox", 9), (std::vector<std::string>{"the quick", "brown fox"}));
  EXPECT_EQ(wrap("abcdefghij", 4), (std::vector<std::string>{"abcd", "efgh", "ij"}));
  EXPECT_EQ(wrap("", 10), (std::vector<std::string>{""}));
  for (const auto& l :
       wrap("PID 4250 (pt_data_worker) holds /dev/nvidia0 on fd 7; its parent is 1", 20))
    EXPECT_LE(text_width(l), 20u) << l;
}

TEST(TuiText, AsciiOnlyForTerminalsWithoutUtf8) {
  EXPECT_EQ(ascii_only("a…b·c"), "a~b-c");
  EXPECT_EQ(ascii_only("x — • →"), "x - * >");
  EXPECT_EQ(ascii_only("61°C"), "61?C");
  EXPECT_EQ(ascii_only("日"), "??");  // keeps the column count
}

TEST(TuiFrame, SliceAndOverlayKeepRolesAndColumns) {
  Line l;
  l.add("hello ", Role::Ghost).add("world", Role::Dim);
  Line s = slice(l, 3, 8);
  EXPECT_EQ(s.text(), "lo wo");
  ASSERT_EQ(s.spans.size(), 2u);
  EXPECT_EQ(s.spans[0].role, Role::Ghost);
  EXPECT_EQ(s.spans[1].role, Role::Dim);

  Frame f;
  f.width = 12;
  f.height = 3;
  f.lines = {Line().add("aaaaaaaaaaaa"),
             pad_line(Line().add("bbbbbbbbbbbb", Role::Ghost), 12).reversed(), Line()};
  overlay(f, 2, 1, {Line().add("[box]", Role::Border)});
  EXPECT_EQ(f.lines[1].text(), "bb[box]bbbbb");
  EXPECT_TRUE(f.lines[1].spans.front().reverse);  // the selection bar stays around the box
  EXPECT_FALSE(f.lines[1].spans[1].reverse);
  EXPECT_EQ(f.lines[0].text(), "aaaaaaaaaaaa");
  EXPECT_EQ(pad_line(Line().add("x"), 3).text(), "x  ");
  EXPECT_EQ(fit_line(Line().add("abcdef"), 3).text(), "abc");
}

TEST(TuiWatch, CutAnsiKeepsColourAndResetsIt) {
  std::string red = "\x1b[31mghost 8.0 GiB\x1b[0m tail";
  EXPECT_EQ(cut_ansi(red, 5), "\x1b[31mghost\x1b[0m");
  EXPECT_EQ(cut_ansi(red, 100), red);
  EXPECT_EQ(cut_ansi("█████", 2), "██");
  EXPECT_EQ(cut_ansi("plain text", 5), "plain");  // no colour: nothing added
}

TEST(TuiWatch, RepaintOverwritesInPlaceWithoutClearingTheScreen) {
  std::string frame = repaint("one\ntwo\n", 80, 24);
  EXPECT_EQ(frame, "\x1b[Hone\x1b[K\r\ntwo\x1b[K\r\n\x1b[J");
  EXPECT_EQ(frame.find("\x1b[2J"), std::string::npos);  // never a full clear: no flicker
  // Never more lines than the terminal has minus one: it must not scroll.
  std::string tall;
  for (int i = 0; i < 50; ++i) tall += "line " + std::to_string(i) + "\n";
  std::string cut = repaint(tall, 80, 10);
  size_t lines = 0;
  for (size_t p = cut.find("\x1b[K"); p != std::string::npos; p = cut.find("\x1b[K", p + 1))
    ++lines;
  EXPECT_EQ(lines, 9u);
  EXPECT_NE(repaint(std::string(200, 'x'), 80, 24).find(std::string(80, 'x') + "\x1b[K"),
            std::string::npos);
  EXPECT_EQ(repaint(std::string(200, 'x'), 80, 24).find(std::string(81, 'x')), std::string::npos);
}

}  // namespace
}  // namespace gpureap::tui

#include <gtest/gtest.h>

#include "tui/frame.h"
#include "tui/watch.h"

namespace gpureap::tui {
namespace {

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

// Escaping of untrusted text (src/text/escape.cpp): nothing from a process name, a command
// line or a user's argument reaches the terminal raw.
#include <gtest/gtest.h>

#include "text/escape.h"

namespace gpureap::text {
namespace {

// HTML and SVG: no name opens an element or leaves an attribute, and what the terminal would
// not show is escaped the same way; ordinary text, UTF-8 included, is left alone.
TEST(MarkupSafe, BracketsQuotesAndAmpersandsBecomeReferences) {
  EXPECT_EQ(markup_safe("<script>alert(\"x\")</script>"),
            "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;");
  EXPECT_EQ(markup_safe("a'b&c"), "a&#39;b&amp;c");
  EXPECT_EQ(markup_safe("python train.py — Zürich"), "python train.py — Zürich");
  EXPECT_EQ(markup_safe("x\x1b[31m\u202e"), "x\\x1b[31m\\u{202e}");
  EXPECT_EQ(markup_safe(std::string_view("\xff<", 2)), "\\xff&lt;");
}

TEST(TerminalSafe, ControlBytesAndInvalidUtf8AreVisibleEscapes) {
  EXPECT_EQ(terminal_safe("a\x1b[31mb"), "a\\x1b[31mb");
  EXPECT_EQ(terminal_safe("x\ny\tz\r"), "x\\ny\\tz\\r");
  EXPECT_EQ(terminal_safe("\x7f"), "\\x7f");
  EXPECT_EQ(terminal_safe("\xc2\x9b"), "\\x9b");  // C1 CSI
  EXPECT_EQ(terminal_safe("\xff"), "\\xff");
  EXPECT_EQ(terminal_safe("python train.py ü"), "python train.py ü");
}

TEST(TerminalSafe, CharactersThatReorderOrHideTextAreEscaped) {
  // "evil" followed by RIGHT-TO-LEFT OVERRIDE would render the rest reversed.
  EXPECT_EQ(terminal_safe("evil\u202Etxt.exe"), "evil\\u{202e}txt.exe");
  for (const char* hidden :
       {"\u202A", "\u202B", "\u202C", "\u202D", "\u2066", "\u2067", "\u2068", "\u2069", "\u200B",
        "\u200C", "\u200D", "\u200E", "\u200F", "\u2028", "\u2029", "\uFEFF"}) {
    auto out = terminal_safe(std::string("a") + hidden + "b");
    EXPECT_EQ(out.find(hidden), std::string::npos) << out;
    EXPECT_NE(out.find("\\u{"), std::string::npos) << out;
  }
  EXPECT_EQ(terminal_safe("\u2014 \u20AC"), "\u2014 \u20AC") << "visible neighbours stay";
}

// RFC 3629: overlong forms, surrogates and code points above U+10FFFF are not UTF-8. Each of
// their bytes is escaped (for JSON and Prometheus, replaced), never passed on.
TEST(TerminalSafe, SequencesThatOnlyLookLikeUtf8AreEscapedByteByByte) {
  EXPECT_EQ(terminal_safe("a\xED\xA0\x80z"), "a\\xed\\xa0\\x80z");       // U+D800
  EXPECT_EQ(terminal_safe("\xE0\x80\x9B"), "\\xe0\\x80\\x9b");           // overlong CSI
  EXPECT_EQ(terminal_safe("\xF0\x80\x80\xBB"), "\\xf0\\x80\\x80\\xbb");  // overlong
  EXPECT_EQ(terminal_safe("\xF4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // U+110000
  EXPECT_EQ(terminal_safe("\xF5\x80\x80\x80"), "\\xf5\\x80\\x80\\x80");
  EXPECT_EQ(utf8_valid("a\xED\xBF\xBFz"), "a\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBDz");
  // The edges that are UTF-8 stay.
  for (const char* valid :
       {"\xE0\xA0\x80", "\xED\x9F\xBF", "\xEE\x80\x80", "\xF0\x90\x80\x80", "\xF4\x8F\xBF\xBF"}) {
    EXPECT_EQ(utf8_valid(valid), valid);
    EXPECT_EQ(terminal_safe(valid), valid);
  }
}

// The other characters that draw nothing: the Arabic letter mark (a bidi control), the word
// joiner and invisible operators, the deprecated format characters, the Mongolian vowel
// separator, the interlinear annotation marks and the tag characters (a text no reader sees).
TEST(TerminalSafe, EveryBidiControlAndInvisibleFormatCharacterIsEscaped) {
  EXPECT_EQ(terminal_safe("a\u061Cb"), "a\\u{061c}b");
  EXPECT_EQ(terminal_safe("x\U000E0041\U000E007F"), "x\\u{e0041}\\u{e007f}");
  for (const char* hidden : {"\u180E", "\u2060", "\u2064", "\u206A", "\u206F", "\uFFF9", "\uFFFB",
                             "\U000E0001", "\U000E0020"}) {
    auto out = terminal_safe(std::string("a") + hidden + "b");
    EXPECT_EQ(out.find(hidden), std::string::npos) << out;
    EXPECT_NE(out.find("\\u{"), std::string::npos) << out;
  }
  EXPECT_EQ(shell_quote("t\U000E0041"), "$'t\\xf3\\xa0\\x81\\x81'");
  // Visible neighbours, emoji and CJK among them, stay.
  EXPECT_EQ(terminal_safe("\u205F\U0001F680\u65E5\u0641"), "\u205F\U0001F680\u65E5\u0641");
}

TEST(TerminalSafe, LinesKeepTheirBreaksAndNothingElse) {
  EXPECT_EQ(terminal_safe_lines("config.toml:1:1: bad\nconfig.toml:2:1: \x1b]0;x\x07"),
            "config.toml:1:1: bad\nconfig.toml:2:1: \\x1b]0;x\\x07");
}

// Shell words in remedies: plain ones as they are, others single-quoted, and those with what a
// terminal would escape written $'...', one line that the shell turns back into the very bytes.
TEST(ShellQuote, PlainQuotedOrEscapedOnOneLine) {
  EXPECT_EQ(shell_quote("/dev/shm/torch_1234"), "/dev/shm/torch_1234");
  EXPECT_EQ(shell_quote("/mnt/my data"), "'/mnt/my data'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("/mnt/Zürich"), "'/mnt/Zürich'");
  EXPECT_EQ(shell_quote("a\nb'c\\d"), "$'a\\nb\\'c\\\\d'");
  EXPECT_EQ(shell_quote("x\ty\x1b[0m"), "$'x\\ty\\x1b[0m'");
  EXPECT_EQ(shell_quote(std::string_view("\xff\xc2\x9b", 3)), "$'\\xff\\xc2\\x9b'");
  EXPECT_EQ(shell_quote("a\u202Eb"), "$'a\\xe2\\x80\\xaeb'");
  // Nothing the terminal would escape is left in it.
  for (const char* w : {"a\nb", "x\ty", "\x7f", "a\u202Eb"})
    EXPECT_EQ(terminal_safe(shell_quote(w)), shell_quote(w)) << w;
}

TEST(CsvField, QuotesAndEscapes) {
  EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_field("x\u202Ey"), "x\\u{202e}y");
}

// Spreadsheet formula injection: a text cell that starts with =, +, -, @, tab or CR would run
// as a formula; it starts with ' instead, and is quoted as any other cell would be.
TEST(CsvField, CellsThatWouldBeFormulasStartWithAQuote) {
  EXPECT_EQ(csv_field("=HYPERLINK(\"http://x\")"), "\"'=HYPERLINK(\"\"http://x\"\")\"");
  EXPECT_EQ(csv_field("=1+1"), "'=1+1");
  EXPECT_EQ(csv_field("+1"), "'+1");
  EXPECT_EQ(csv_field("-bash"), "'-bash");
  EXPECT_EQ(csv_field("@SUM(A1)"), "'@SUM(A1)");
  EXPECT_EQ(csv_field("\t=1"), "'\\t=1");
  EXPECT_EQ(csv_field("\r=1"), "'\\r=1");
  EXPECT_EQ(csv_field("=a,b"), "\"'=a,b\"");
  // Only the first character counts; ordinary and empty cells are as they were.
  EXPECT_EQ(csv_field("python a=1 -v"), "python a=1 -v");
  EXPECT_EQ(csv_field("1+1"), "1+1");
  EXPECT_EQ(csv_field(""), "");
}

}  // namespace
}  // namespace gpureap::text

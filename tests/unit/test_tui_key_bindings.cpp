// top's key table: every binding is listed in the help screen, the help screen lists nothing
// that is not bound, and no key is bound twice.
#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <utility>

#include "tui/key_bindings.h"
#include "tui/model.h"

namespace gpureap::tui {
namespace {

std::string help_text(bool readonly) {
  TopModel m(TopSettings{readonly, true, std::chrono::milliseconds(1000), Viewer{}});
  m.set_size(200, 80);  // room for every line of help
  m.handle(Key::chr(U'?'));
  EXPECT_EQ(m.mode(), Mode::Help);
  return m.compose().text();
}

TEST(TuiKeyBindings, EveryBindingAppearsInHelpWithItsDescription) {
  std::string help = help_text(false);
  for (const auto& group : table_bindings()) {
    EXPECT_NE(help.find(group.what.substr(0, 30)), std::string::npos) << group.what << "\n" << help;
    for (const auto& b : group.bindings) {
      std::string name = b.key.name();
      ASSERT_FALSE(name.empty());
      EXPECT_NE(help.find(name), std::string::npos) << name;
    }
  }
  EXPECT_NE(help_text(true).find("kill: disabled (--readonly)"), std::string::npos);
}

TEST(TuiKeyBindings, HelpListsNothingUnbound) {
  // Each name in the help's key column names a key that the table binds.
  for (const auto& group : table_bindings()) {
    std::istringstream words(keys_label(group));
    for (std::string w; words >> w;) {
      bool bound = false;
      for (const auto& b : group.bindings) bound |= b.key.name() == w;
      EXPECT_TRUE(bound) << w;
    }
  }
  // And every binding the help names is the one its key triggers (none is shadowed).
  for (const auto& group : table_bindings())
    for (const auto& b : group.bindings) {
      Key key{b.key.kind, b.key.ch, 0};
      auto found = binding_for(key);
      ASSERT_TRUE(found) << b.key.name();
      EXPECT_EQ(found->action, b.action) << b.key.name();
    }
}

TEST(TuiKeyBindings, TheRenderedKeyColumnNamesOnlyBoundKeys) {
  std::set<std::string> bound;
  for (const auto& group : table_bindings())
    for (const auto& b : group.bindings) bound.insert(b.key.name());
  std::istringstream lines(help_text(false));
  bool in_box = false;
  size_t listed = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.find("gpureap top: keys") != std::string::npos) {
      in_box = true;
      continue;
    }
    auto border = line.find("│ ");
    if (!in_box || border == std::string::npos) continue;
    std::string content = line.substr(border + std::string("│ ").size());
    if (content.find_first_not_of(' ') == std::string::npos || content.find_first_not_of(' ') > 100)
      break;  // the blank line before the legends ends the keys
    std::istringstream keys(content.substr(0, 28));  // the key column at this width
    for (std::string k; keys >> k; ++listed) EXPECT_TRUE(bound.count(k)) << k << " in: " << line;
  }
  EXPECT_EQ(listed, bound.size());  // and each bound key once
}

TEST(TuiKeyBindings, NoKeyIsBoundTwiceAndUnboundKeysDoNothing) {
  std::set<std::pair<int, char32_t>> seen;
  for (const auto& group : table_bindings())
    for (const auto& b : group.bindings)
      EXPECT_TRUE(seen.insert({b.key.kind, b.key.ch}).second) << b.key.name() << " twice";
  EXPECT_FALSE(binding_for(Key::chr(U'x')));
  EXPECT_FALSE(binding_for(Key::of(Key::Backspace)));
}

TEST(TuiKeyBindings, EverySortColumnHasItsKey) {
  for (Column c : kAllColumns) {
    auto b = binding_for(Key::chr(static_cast<char32_t>(sort_key(c))));
    ASSERT_TRUE(b);
    EXPECT_EQ(b->action, Action::SortBy);
    EXPECT_EQ(b->column, c);
  }
}

}  // namespace
}  // namespace gpureap::tui

// What `ps --gpu`, `--user` and `--pid` leave on the screen (src/output/ps_select.cpp): the
// empty table names the filter, and the footer speaks of the GPUs shown alone.
#include <gtest/gtest.h>

#include "output/ps_select.h"
#include "output/ps_view.h"
#include "snapshot_builders.h"

namespace gpureap::output {
namespace {

using namespace gpureap::testing;

// GPU 0: gone PID 300 kept by 301. GPU 1: alice's 401.
core::Snapshot two_gpus() {
  return make_snapshot(
      {proc(1, 0, 1), holder(301, 1, 300, 0), owned(holder(401, 1, 401, 1), 1000, "alice")},
      {gpu(0, 0, 8 * GiB, {listed(300, 8 * GiB)}), gpu(1, 1, 2 * GiB, {listed(401, 2 * GiB)})});
}

std::string screen(const core::Snapshot& s, const PsSelection& sel) {
  return render_ps(select_rows(s, sel), Style(false),
                   {.width = std::nullopt, .scope = scope_words(sel)});
}

TEST(PsScope, TheWordsNameEachFilter) {
  EXPECT_EQ(scope_words({}), "");
  EXPECT_EQ(scope_words({.users = {"nobody"}}), "of user nobody");
  EXPECT_EQ(scope_words({.gpus = {1}}), "on GPU 1");
  EXPECT_EQ(scope_words({.gpus = {0, 1}, .users = {"a", "b", "c"}, .pids = {7}}),
            "with PID 7 of users a, b or c on GPUs 0 or 1");
  EXPECT_EQ(scope_words({.users = {"x\x1b[2J"}}), "of user x\\x1b[2J");
}

TEST(PsScope, AnEmptyTableNamesTheUserItWasFilteredTo) {
  auto text = screen(two_gpus(), {.users = {"nobody"}});
  EXPECT_NE(text.find("No process of user nobody holds a GPU device file or is listed by the "
                      "driver."),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("Nothing holds the GPUs"), std::string::npos) << text;
  // GPU 0's ghost is no user's: its footer stays. Without one, the footer says what to run.
  EXPECT_NE(text.find("`gpureap kill 300`"), std::string::npos) << text;
  auto alice = make_snapshot({proc(1, 0, 1), owned(holder(401, 1, 401, 0), 1000, "alice")},
                             {gpu(0, 0, 2 * GiB, {listed(401, 2 * GiB)})});
  text = screen(alice, {.users = {"nobody"}});
  EXPECT_NE(text.find("No process of user nobody holds"), std::string::npos) << text;
  EXPECT_NE(text.find("`gpureap ps` without the filter shows every holder."), std::string::npos)
      << text;
  EXPECT_EQ(text.find("Nothing holds the GPUs"), std::string::npos) << text;
  EXPECT_NE(screen(alice, {.users = {"alice"}}).find("p401"), std::string::npos);
  // Unfiltered and empty, it says nothing holds them.
  auto none = make_snapshot({proc(1, 0, 1)}, {gpu(0, 0, 0, {})});
  text = screen(none, {});
  EXPECT_NE(text.find("No process holds a GPU device file"), std::string::npos) << text;
  EXPECT_NE(text.find("Nothing holds the GPUs."), std::string::npos) << text;
}

TEST(PsScope, TheFooterSpeaksOfTheGpusShownAlone) {
  auto s = two_gpus();
  auto on1 = screen(s, {.gpus = {1}});
  EXPECT_EQ(on1.find("GPU 0"), std::string::npos) << on1;
  EXPECT_EQ(on1.find("gpureap kill 300"), std::string::npos) << on1;
  EXPECT_NE(on1.find("No ghosts."), std::string::npos) << on1;
  // GPU 0's ghost is still told where GPU 0 is shown.
  for (const PsSelection& sel : {PsSelection{}, PsSelection{.gpus = {0}}}) {
    auto text = screen(s, sel);
    EXPECT_NE(text.find("8.0 GiB on GPU 0 is held by ghosts"), std::string::npos) << text;
    EXPECT_NE(text.find("`gpureap kill 300`"), std::string::npos) << text;
  }
}

}  // namespace
}  // namespace gpureap::output

#include <gtest/gtest.h>

#include "output/audit_view.h"
#include "text/display_width.h"
#include "text_lines.h"

namespace gpureap::output {
namespace {

using namespace std::chrono;

constexpr uint64_t kGiB = uint64_t{1} << 30;

// A policy's kill of a 7-digit PID that got its memory back, and a command announced by root.
std::vector<audit::Record> records() {
  audit::Record kill;
  kill.time = system_clock::time_point(seconds(1'796'000'000));
  kill.event = "action";
  kill.policy = "stale-ghost-keepers";
  kill.action = "terminate";
  kill.enforced = true;
  kill.outcome = "released";
  kill.process.pid = 4'194'303;
  kill.process.user = "alice";
  kill.process.cmdline = {"python", "-m", "trainer.ddp_worker", "--rank", "3"};
  kill.memory = {{0, 8 * kGiB}, {1, 4 * kGiB}};
  kill.released_bytes = 12 * kGiB;
  audit::Record announced;
  announced.time = kill.time + seconds(61);
  announced.event = "announced";
  announced.action = "kill";
  announced.outcome = "acting";
  announced.process.pid = 1'048'576;
  announced.process.uid = 1001;
  announced.process.comm = "serve";
  announced.memory = {{1, std::nullopt}};
  announced.actor = audit::Actor{0, "root", "gpureap kill 1048576"};
  return {kill, announced};
}

size_t widest(const std::string& screen) {
  size_t w = 0;
  for (const auto& line : testing::lines_of(screen)) w = std::max(w, text::text_width(line));
  return w;
}

// At 80 columns MEMORY, RELEASED and COMMAND keep their columns; who asked, the action and the
// user go to a line under each row.
TEST(AuditView, At80ColumnsMemoryReleasedAndCommandKeepTheirColumns) {
  const std::string screen = render_audit_table(records(), Style(false), 80);
  EXPECT_EQ(screen,
            "TIME (UTC)           OUTCOME   PID      MEMORY  RELEASED  COMMAND\n"
            "2026-11-30 00:53:20  released  4194303  12 GiB  12 GiB    python -m trainer.ddp…\n"
            "                     by stale-ghost-keepers, action terminate, user alice\n"
            "2026-11-30 00:54:21  acting    1048576  -       -         (serve)\n"
            "                     by gpureap kill 1048576 (root), action kill, user 1001\n");
  EXPECT_LE(widest(screen), 80u);
}

// Where it fits, one row per record with every column.
TEST(AuditView, WideEnoughEveryColumnInItsRow) {
  const std::string screen = render_audit_table(records(), Style(false), 200);
  EXPECT_EQ(
      screen,
      "TIME (UTC)           BY                           ACTION     OUTCOME   PID      USER   "
      "MEMORY  RELEASED  COMMAND\n"
      "2026-11-30 00:53:20  stale-ghost-keepers          terminate  released  4194303  alice  "
      "12 GiB  12 GiB    python -m trainer.ddp_worker --rank 3\n"
      "2026-11-30 00:54:21  gpureap kill 1048576 (root)  kill       acting    1048576  1001   "
      "-       -         (serve)\n");
  EXPECT_EQ(render_audit_table(records(), Style(false), std::nullopt), screen);
}

// A gone PID's action reaches its keepers, not the row's PID: a line under the row names them
// and the signals each was sent, escaped, at any width.
TEST(AuditView, AGonePidsActionNamesTheKeepersItSignalled) {
  audit::Record gone;
  gone.time = system_clock::time_point(seconds(1'796'000'000));
  gone.event = "action";
  gone.policy = "ghosts";
  gone.action = "terminate";
  gone.enforced = true;
  gone.outcome = "released";
  gone.process.pid = 4242;
  gone.released_bytes = 8 * kGiB;
  gone.signalled = {{4250, 100, "python\x1b[2J", 1000, "alice", {"SIGTERM", "SIGKILL"}},
                    {4251, 101, "", 1001, std::nullopt, {"SIGTERM"}}};
  const std::string note =
      "signalled PID 4250 (python\\x1b[2J, user alice) SIGTERM, SIGKILL; PID 4251 (uid 1001) "
      "SIGTERM";
  const std::string wide = render_audit_table({gone}, Style(false), 200);
  EXPECT_EQ(wide,
            "TIME (UTC)           BY      ACTION     OUTCOME   PID   USER  MEMORY  RELEASED  "
            "COMMAND\n"
            "2026-11-30 00:53:20  ghosts  terminate  released  4242  -     -       8.0 GiB   -\n"
            "                     " +
                note + "\n");
  const std::string narrow = render_audit_table({gone}, Style(false), 60);
  EXPECT_NE(narrow.find("by ghosts, action terminate, user -"), std::string::npos) << narrow;
  EXPECT_NE(narrow.find("signalled PID 4250"), std::string::npos) << narrow;
  EXPECT_LE(widest(narrow), 60u) << narrow;
}

}  // namespace
}  // namespace gpureap::output

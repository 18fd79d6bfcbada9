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

}  // namespace
}  // namespace gpureap::output

// One resolver from a GPU as named (`--gpu`, a policy's `gpu`) to its scope: every path that
// scopes by GPU refuses a bad or unknown one in the resolver's own words.
#include <gtest/gtest.h>

#include "core/gpu_resolve.h"
#include "output/ps_render.h"
#include "output/ps_select.h"
#include "snapshot_builders.h"

namespace gpureap::core {
namespace {

using namespace gpureap::testing;

Snapshot one_gpu() {
  return make_snapshot({proc(1, 0, 1), holder(10, 1, 10)}, {gpu(0, 0, GiB, {listed(10, GiB)})});
}

TEST(GpuResolve, ResolvesEveryWayOfNamingAGpu) {
  auto s = one_gpu();
  auto whole = resolve_gpu(s, "0");
  EXPECT_FALSE(whole.problem);
  EXPECT_EQ(whole.place, (GpuPlace{0, std::nullopt, std::nullopt}));
  auto typo = resolve_gpu(s, "0/x");
  ASSERT_TRUE(typo.problem);
  EXPECT_EQ(typo.problem->error.message, "--gpu 0/x names no GPU");
  auto missing = resolve_gpu(s, "9");
  ASSERT_TRUE(missing.problem);
  EXPECT_EQ(missing.problem->error.message, "GPU 9 does not exist");
  EXPECT_FALSE(missing.problem->driver_down);
  auto whole_split = resolve_gpu(s, "0/3");
  ASSERT_TRUE(whole_split.problem);
  EXPECT_NE(whole_split.problem->error.message.find("GPU 0 is not split into instances"),
            std::string::npos);
}

TEST(GpuResolve, EveryPathRefusesABadOrUnknownGpuInTheSameWords) {
  auto s = one_gpu();
  for (const std::string text : {"9", "0/3", "0/3/1", "0/x", "GPU-00000000-nope", "MIG-nope"}) {
    SCOPED_TRACE(text);
    auto want = resolve_gpu(s, text).problem;
    ASSERT_TRUE(want);
    const std::string& words = want->error.message;

    // `ps` (its own scan and the daemon's evidence render through the same function, and
    // `doctor` resolves the daemon's snapshot as its own with resolve_gpu).
    output::PsSelection select;
    auto split = output::add_gpu_values(select, {text});
    if (!split) {
      EXPECT_EQ(split.error().message, words);  // a typo, told before anything is collected
    } else {
      auto bad = output::check_selection(s, select);
      ASSERT_TRUE(bad);
      EXPECT_EQ(bad->error.message, words);
      auto rendered = output::render_ps_command(s, {.select = select});
      ASSERT_FALSE(rendered.err.empty());
      EXPECT_EQ(rendered.err.front(), "gpureap: " + words);
    }
  }
}

}  // namespace
}  // namespace gpureap::core

// Every enum with stable names follows text/enum_names.h: each enumerator has a name of its own,
// the names read back as the enumerators they name, and a value past the last has none.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "alert/rule.h"
#include "core/anomaly.h"
#include "core/gpu.h"
#include "core/kernel_event.h"
#include "doctor/finding.h"
#include "doctor/finding_code.h"
#include "history/journal.h"
#include "output/ps_select.h"
#include "policy/policy.h"
#include "reap/executor.h"
#include "reap/outcome.h"
#include "reap/plan.h"
#include "report/page.h"
#include "text/enum_names.h"

namespace gpureap::sample_names {

enum class Fruit { Apple, Pear, Plum };

std::string_view to_string(Fruit f) {
  switch (f) {
    case Fruit::Apple:
      return "apple";
    case Fruit::Pear:
      return "pear";
    case Fruit::Plum:
      return "plum";
  }
  return {};
}

}  // namespace gpureap::sample_names

namespace gpureap {
namespace {

using sample_names::Fruit;

TEST(EnumNames, TheEnumeratorsAreTheNamedValuesInOrder) {
  EXPECT_EQ(text::enumerators<Fruit>(),
            (std::vector<Fruit>{Fruit::Apple, Fruit::Pear, Fruit::Plum}));
  EXPECT_EQ(text::enum_name_list<Fruit>(), "apple, pear, plum");
  EXPECT_EQ(text::enum_name_list<Fruit>(" | "), "apple | pear | plum");
}

TEST(EnumNames, ANameReadsBackOnlyExactly) {
  EXPECT_EQ(text::enum_from_name<Fruit>("pear"), Fruit::Pear);
  EXPECT_EQ(text::enum_from_name<Fruit>("Pear"), std::nullopt);
  EXPECT_EQ(text::enum_from_name<Fruit>("pear "), std::nullopt);
  EXPECT_EQ(text::enum_from_name<Fruit>(""), std::nullopt);
  EXPECT_EQ(text::enum_from_name<Fruit>(std::string_view("pear\0x", 6)), std::nullopt);
}

template <typename E>
class EveryNamedEnum : public ::testing::Test {};

using NamedEnums =
    ::testing::Types<doctor::FindingCode, doctor::Severity, doctor::StepKind, core::Anomaly,
                     core::GpuProcessKind, core::BackendErrorCode, core::Shortage,
                     core::KernelEventLevel, core::KernelStamp, policy::Action, alert::Condition,
                     output::PsSort, history::JournalEventKind, reap::ReasonKind, reap::Action,
                     reap::OutcomeKind, reap::ExecStatus, report::MarkerKind, report::GhostEnding>;
TYPED_TEST_SUITE(EveryNamedEnum, NamedEnums);

TYPED_TEST(EveryNamedEnum, EachEnumeratorHasANameOfItsOwnThatReadsBack) {
  using E = TypeParam;
  const auto& all = text::enumerators<E>();
  ASSERT_FALSE(all.empty());
  std::set<std::string> names;
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(static_cast<size_t>(all[i]), i);
    const std::string name(to_string(all[i]));
    EXPECT_FALSE(name.empty());
    EXPECT_TRUE(names.insert(name).second) << "two enumerators are named " << name;
    EXPECT_EQ(text::enum_from_name<E>(name), all[i]) << name;
  }
  // Past the last enumerator: no name, so no value outside the enum reads as one.
  EXPECT_EQ(std::string_view(to_string(static_cast<E>(all.size()))), "");
  EXPECT_EQ(std::string_view(to_string(static_cast<E>(all.size() + 7))), "");
}

}  // namespace
}  // namespace gpureap

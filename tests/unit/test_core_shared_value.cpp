// core::SharedValue: copies share the value, a change through one copy never shows in another,
// and it reads as the std::optional it stands in for.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/process.h"
#include "core/shared_value.h"

namespace gpureap::core {
namespace {

TEST(SharedValue, ReadsAsAnOptional) {
  SharedValue<std::string> none;
  EXPECT_FALSE(none.has_value());
  EXPECT_FALSE(none);
  EXPECT_THROW((void)none.value(), std::bad_optional_access);
  EXPECT_FALSE(none.optional().has_value());
  SharedValue<std::string> some = std::string("nvidia-smi");
  ASSERT_TRUE(some);
  EXPECT_EQ(*some, "nvidia-smi");
  EXPECT_EQ(some->size(), 10u);
  EXPECT_EQ(some.optional(), std::optional<std::string>("nvidia-smi"));
  some = std::nullopt;
  EXPECT_FALSE(some);
  some = std::optional<std::string>("python3");
  EXPECT_EQ(some.value(), "python3");
  some.reset();
  EXPECT_FALSE(some);
  some.emplace("torchrun");
  EXPECT_EQ(*some, "torchrun");
}

TEST(SharedValue, ACopySharesUntilOneIsChanged) {
  const SharedValue<std::string> first = std::string("a");
  SharedValue<std::string> second = first;
  EXPECT_EQ(&*first, &*std::as_const(second));  // one value, not a copy
  second->append("b");
  EXPECT_EQ(*first, "a");  // the change is the copy's alone
  EXPECT_EQ(*std::as_const(second), "ab");
  EXPECT_NE(&*first, &*std::as_const(second));
}

TEST(SharedValue, AListOfProcessesSharesTheirDetails) {
  HostProcess holder;
  holder.stat.pid = 4194304;
  holder.details.emplace().cmdline = {"python3", "train.py"};
  std::vector<HostProcess> list(2000);
  list.push_back(holder);
  std::vector<HostProcess> copy = list;
  EXPECT_EQ(&*std::as_const(list).back().details, &*std::as_const(copy).back().details);
  copy.back().details->cmdline.push_back("--resume");
  EXPECT_EQ(list.back().details->cmdline, (std::vector<std::string>{"python3", "train.py"}));
  EXPECT_EQ(copy.back().details->cmdline.size(), 3u);
  // The room of a process without details is a pointer's, not the details'.
  EXPECT_LE(sizeof(HostProcess::details), 2 * sizeof(void*));
}

}  // namespace
}  // namespace gpureap::core

// Symbol resolution with an injected resolver: fallbacks to older names, the version that
// resolved, optional symbols that disable one metric, required ones that stop the backend.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "backend/nvml/symbol_table.h"

namespace gpureap::backend::nvml {
namespace {

// Every name any spec mentions.
std::set<std::string> all_names() {
  std::set<std::string> names;
  for (const auto& spec : symbol_specs()) {
    for (const auto& candidate : spec.candidates) {
      if (candidate.name != nullptr) names.insert(candidate.name);
    }
  }
  return names;
}

// Resolves the names in `present` to distinct non-null addresses, nothing else.
class FakeResolver {
 public:
  explicit FakeResolver(std::set<std::string> present) : present_(std::move(present)) {}
  SymbolResolver resolver() const {
    return [this](const char* name) -> void* {
      auto it = present_.find(name);
      if (it == present_.end()) return nullptr;
      return const_cast<std::string*>(&*it);  // a unique, stable address per name
    };
  }
  void remove(const std::string& name) { present_.erase(name); }

 private:
  std::set<std::string> present_;
};

TEST(nvmlSymbolTable, EveryFunctionResolvesToItsNewestName) {
  FakeResolver fake(all_names());
  auto table = SymbolTable::resolve(fake.resolver());
  ASSERT_TRUE(table.ok()) << table.error().text();
  EXPECT_STREQ(table->name(Fn::Init), "nvmlInit_v2");
  EXPECT_EQ(table->version(Fn::Init), 2);
  EXPECT_STREQ(table->name(Fn::ComputeRunningProcesses), "nvmlDeviceGetComputeRunningProcesses_v3");
  EXPECT_EQ(table->version(Fn::ComputeRunningProcesses), 3);
  EXPECT_EQ(table->version(Fn::GraphicsRunningProcesses), 3);
  EXPECT_EQ(table->version(Fn::MpsComputeRunningProcesses), 3);
  EXPECT_EQ(table->version(Fn::MemoryInfo), 2);
  EXPECT_EQ(table->version(Fn::PciInfo), 3);
  EXPECT_STREQ(table->name(Fn::DeviceGetCount), "nvmlDeviceGetCount_v2");
  EXPECT_STREQ(table->name(Fn::DeviceGetHandleByIndex), "nvmlDeviceGetHandleByIndex_v2");
  EXPECT_TRUE(table->missing_optional().empty());
  for (std::size_t i = 0; i < kFnCount; ++i) {
    EXPECT_TRUE(table->has(static_cast<Fn>(i))) << symbol_specs()[i].candidates[0].name;
  }
}

TEST(nvmlSymbolTable, MissingV3ProcessFunctionsFallBackToV2) {
  FakeResolver fake(all_names());
  fake.remove("nvmlDeviceGetComputeRunningProcesses_v3");
  fake.remove("nvmlDeviceGetGraphicsRunningProcesses_v3");
  fake.remove("nvmlDeviceGetMPSComputeRunningProcesses_v3");
  auto table = SymbolTable::resolve(fake.resolver());
  ASSERT_TRUE(table.ok());
  EXPECT_STREQ(table->name(Fn::ComputeRunningProcesses), "nvmlDeviceGetComputeRunningProcesses_v2");
  EXPECT_EQ(table->version(Fn::ComputeRunningProcesses), 2);
  EXPECT_EQ(table->version(Fn::GraphicsRunningProcesses), 2);
  EXPECT_EQ(table->version(Fn::MpsComputeRunningProcesses), 2);
  EXPECT_TRUE(table->missing_optional().empty());
}

TEST(nvmlSymbolTable, MissingV2AndV3ProcessFunctionsFallBackToV1) {
  FakeResolver fake(all_names());
  for (const char* kind : {"Compute", "Graphics", "MPSCompute"}) {
    fake.remove(std::string("nvmlDeviceGet") + kind + "RunningProcesses_v3");
    fake.remove(std::string("nvmlDeviceGet") + kind + "RunningProcesses_v2");
  }
  auto table = SymbolTable::resolve(fake.resolver());
  ASSERT_TRUE(table.ok());
  EXPECT_STREQ(table->name(Fn::ComputeRunningProcesses), "nvmlDeviceGetComputeRunningProcesses");
  EXPECT_EQ(table->version(Fn::ComputeRunningProcesses), 1);
  EXPECT_STREQ(table->name(Fn::MpsComputeRunningProcesses),
               "nvmlDeviceGetMPSComputeRunningProcesses");
  EXPECT_EQ(table->version(Fn::MpsComputeRunningProcesses), 1);
}

TEST(nvmlSymbolTable, EachProcessListFallsBackIndependently) {
  FakeResolver fake(all_names());
  fake.remove("nvmlDeviceGetMPSComputeRunningProcesses_v3");
  fake.remove("nvmlDeviceGetMPSComputeRunningProcesses_v2");
  auto table = SymbolTable::resolve(fake.resolver());
  ASSERT_TRUE(table.ok());
  EXPECT_EQ(table->version(Fn::ComputeRunningProcesses), 3);
  EXPECT_EQ(table->version(Fn::MpsComputeRunningProcesses), 1);
}

TEST(nvmlSymbolTable, MissingMemoryInfoV2FallsBackToV1) {
  FakeResolver fake(all_names());
  fake.remove("nvmlDeviceGetMemoryInfo_v2");
  auto table = SymbolTable::resolve(fake.resolver());
  ASSERT_TRUE(table.ok());
  EXPECT_STREQ(table->name(Fn::MemoryInfo), "nvmlDeviceGetMemoryInfo");
  EXPECT_EQ(table->version(Fn::MemoryInfo), 1);
}

TEST(nvmlSymbolTable, OldInitAndPciNamesAreUsed) {
  FakeResolver fake(all_names());
  fake.remove("nvmlInit_v2");
  fake.remove("nvmlDeviceGetCount_v2");
  fake.remove("nvmlDeviceGetPciInfo_v3");
  auto table = SymbolTable::resolve(fake.resolver());
  ASSERT_TRUE(table.ok());
  EXPECT_STREQ(table->name(Fn::Init), "nvmlInit");
  EXPECT_EQ(table->version(Fn::Init), 1);
  EXPECT_STREQ(table->name(Fn::DeviceGetCount), "nvmlDeviceGetCount");
  EXPECT_STREQ(table->name(Fn::PciInfo), "nvmlDeviceGetPciInfo_v2");
  EXPECT_EQ(table->version(Fn::PciInfo), 2);
}

TEST(nvmlSymbolTable, MissingOptionalSymbolDisablesOnlyThatFunction) {
  FakeResolver fake(all_names());
  fake.remove("nvmlDeviceGetTemperature");
  fake.remove("nvmlDeviceGetProcessUtilization");
  auto table = SymbolTable::resolve(fake.resolver());
  ASSERT_TRUE(table.ok());
  EXPECT_FALSE(table->has(Fn::Temperature));
  EXPECT_EQ(table->address(Fn::Temperature), nullptr);
  EXPECT_EQ(table->version(Fn::Temperature), 0);
  EXPECT_FALSE(table->has(Fn::ProcessUtilization));
  EXPECT_TRUE(table->has(Fn::PowerUsage));
  const auto missing = table->missing_optional();
  ASSERT_EQ(missing.size(), 2u);
  EXPECT_EQ(missing[0], "nvmlDeviceGetTemperature (GPU temperature)");
  EXPECT_EQ(missing[1], "nvmlDeviceGetProcessUtilization (per-process SM utilisation)");
}

TEST(nvmlSymbolTable, MissingRequiredSymbolIsAClearError) {
  FakeResolver fake(all_names());
  fake.remove("nvmlInit_v2");
  fake.remove("nvmlInit");
  auto table = SymbolTable::resolve(fake.resolver());
  ASSERT_FALSE(table.ok());
  EXPECT_NE(table.error().message.find("nvmlInit_v2 / nvmlInit"), std::string::npos)
      << table.error().message;
  EXPECT_NE(table.error().hint.find("--nvml-library"), std::string::npos);
}

TEST(nvmlSymbolTable, EveryMissingRequiredSymbolIsNamed) {
  FakeResolver fake({"nvmlInit"});
  auto table = SymbolTable::resolve(fake.resolver());
  ASSERT_FALSE(table.ok());
  const std::string& message = table.error().message;
  EXPECT_EQ(message.find("nvmlInit_v2"), std::string::npos) << "nvmlInit resolved: " << message;
  EXPECT_NE(message.find("nvmlShutdown"), std::string::npos);
  EXPECT_NE(message.find("nvmlDeviceGetCount_v2 / nvmlDeviceGetCount"), std::string::npos);
  EXPECT_NE(message.find("nvmlDeviceGetHandleByIndex_v2 / nvmlDeviceGetHandleByIndex"),
            std::string::npos);
}

TEST(nvmlSymbolTable, OnlyRequiredSymbolsIsEnough) {
  FakeResolver fake(
      {"nvmlInit", "nvmlShutdown", "nvmlDeviceGetCount", "nvmlDeviceGetHandleByIndex"});
  auto table = SymbolTable::resolve(fake.resolver());
  ASSERT_TRUE(table.ok()) << table.error().text();
  EXPECT_FALSE(table->has(Fn::ComputeRunningProcesses));
  EXPECT_FALSE(table->has(Fn::MemoryInfo));
  EXPECT_EQ(table->missing_optional().size(), kFnCount - 4);
}

}  // namespace
}  // namespace gpureap::backend::nvml

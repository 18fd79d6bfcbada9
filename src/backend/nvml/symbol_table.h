#pragma once
// The one table of NVML symbols gpureap uses. Drivers span a decade of NVML releases, so
// each function is looked up newest name first with older fallbacks, and the version that
// resolved is kept: it decides which struct the function writes. A missing optional
// function disables one metric; a missing required one makes the backend unusable.
#include <array>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "core/result.h"

namespace gpureap::backend::nvml {

enum class Fn : std::size_t {
  Init,
  Shutdown,
  ErrorString,
  DeviceGetCount,
  DeviceGetHandleByIndex,
  ComputeRunningProcesses,
  GraphicsRunningProcesses,
  MpsComputeRunningProcesses,
  MemoryInfo,
  PciInfo,
  Name,
  Uuid,
  MinorNumber,
  UtilizationRates,
  Temperature,
  PowerUsage,
  MigMode,
  ProcessUtilization,
  DriverVersion,
  NvmlVersion,
  ProcessName,
  MaxMigDeviceCount,
  MigDeviceHandleByIndex,
  GpuInstanceId,
  ComputeInstanceId,
  Count_,  // number of entries; not a function
};
inline constexpr std::size_t kFnCount = static_cast<std::size_t>(Fn::Count_);

struct SymbolCandidate {
  const char* name = nullptr;  // nullptr ends the list
  int version = 0;             // API version this name implies (1 = unsuffixed)
};

struct SymbolSpec {
  Fn fn;
  bool required;
  const char* serves;                         // what is lost without it, for warnings
  std::array<SymbolCandidate, 3> candidates;  // newest first
};

// The table itself, indexed by Fn.
const std::array<SymbolSpec, kFnCount>& symbol_specs();

// Looks a symbol name up: dlsym on a loaded library, or a test's map of names.
using SymbolResolver = std::function<void*(const char* name)>;

struct ResolvedSymbol {
  void* address = nullptr;
  const char* name = nullptr;  // the name that resolved
  int version = 0;             // 0 when missing
};

class SymbolTable {
 public:
  // Fails only when a required function is missing under every name.
  static core::Result<SymbolTable> resolve(const SymbolResolver& resolver);

  bool has(Fn fn) const { return at(fn).address != nullptr; }
  int version(Fn fn) const { return at(fn).version; }
  const char* name(Fn fn) const { return at(fn).name; }
  void* address(Fn fn) const { return at(fn).address; }

  // The function pointer, typed by the caller (who picks the type by version()).
  template <class F>
  F get(Fn fn) const {
    return reinterpret_cast<F>(address(fn));
  }

  // "nvmlDeviceGetTemperature (GPU temperature)" for each optional function not found.
  std::vector<std::string> missing_optional() const;

  // What the missing optional functions leave unknown, one entry per capability ("MIG
  // instances"), with the functions it lacks for it, in the table's order.
  struct MissingCapability {
    std::string serves;
    std::vector<std::string> functions;
  };
  std::vector<MissingCapability> missing_capabilities() const;

 private:
  const ResolvedSymbol& at(Fn fn) const { return symbols_[static_cast<std::size_t>(fn)]; }

  std::array<ResolvedSymbol, kFnCount> symbols_{};
};

}  // namespace gpureap::backend::nvml

#pragma once
// What every exported function of the double shares: the init reference count, the
// scenario (re-read when its file changes, so a test can change the world under a running
// daemon), device handles, and the "block forever" switch for watchdog tests.
#include <functional>
#include <string>

#include "nvml_abi.h"
#include "scenario.h"

namespace fake_nvml {

// nvmlInit*: (re)reads the scenario named by FAKE_NVML_SCENARIO.
nvmlReturn_t init(const char* function);
nvmlReturn_t shutdown(const char* function);

// Runs `body` for an exported function once NVML is initialised; exceptions become
// NVML_ERROR_UNKNOWN so none crosses the C ABI.
nvmlReturn_t call(const char* function, const std::function<nvmlReturn_t(const Scenario&)>& body);

// As call(), for a function on a device handle: an unknown handle is INVALID_ARGUMENT, and a
// GPU with an "error" returns that error from every call.
nvmlReturn_t call_device(
    const char* function, nvmlDevice_t device,
    const std::function<nvmlReturn_t(const Scenario&, unsigned index, const Gpu&)>& body);

nvmlDevice_t handle_for(unsigned index);

// NVML's string convention: INSUFFICIENT_SIZE when text and its NUL do not fit.
nvmlReturn_t copy_string(const std::string& text, char* out, unsigned length);

}  // namespace fake_nvml

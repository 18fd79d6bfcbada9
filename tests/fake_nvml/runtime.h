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

// As call_device(), for a function that MIG device handles answer too: `mig` is the MIG
// device a MIG handle stands for, null for a GPU's own handle. call_device() answers a MIG
// handle NOT_SUPPORTED, as NVML does for what a MIG device does not have.
nvmlReturn_t call_any_device(
    const char* function, nvmlDevice_t device,
    const std::function<nvmlReturn_t(const Scenario&, unsigned index, const Gpu&,
                                     const MigDevice* mig)>& body);

nvmlDevice_t handle_for(unsigned index);
// The handle of the MIG device in `slot` of GPU `index` (null beyond the double's tables).
nvmlDevice_t mig_handle_for(unsigned index, unsigned slot);

// NVML's string convention: INSUFFICIENT_SIZE when text and its NUL do not fit.
nvmlReturn_t copy_string(const std::string& text, char* out, unsigned length);

}  // namespace fake_nvml

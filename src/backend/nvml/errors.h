#pragma once
// NVML return codes turned into what a user can act on: what failed, why, what to do.
#include <string>

#include "backend/nvml/abi.h"
#include "backend/nvml/symbol_table.h"
#include "core/gpu.h"
#include "core/result.h"

namespace gpureap::backend::nvml {

// "NVML_ERROR_GPU_IS_LOST"; stable names for logs and searches.
const char* return_code_name(nvmlReturn_t rc);

// nvmlInit (named by `function`) failed with `rc`; `nvml_text` is nvmlErrorString's text
// when the library has it (may be null).
core::Error init_error(nvmlReturn_t rc, const char* function, const char* nvml_text);

// BackendReport::error_code for an nvmlInit failure: driver-not-loaded, version-mismatch,
// no-permission, or init-failed.
core::BackendErrorCode init_error_code(nvmlReturn_t rc);

// A call on GPU `index` failed in a way that makes that GPU's data untrustworthy.
core::Error gpu_error(unsigned index, nvmlReturn_t rc, const char* function, const char* nvml_text);

// nvmlErrorString's text when the library has it, else null.
const char* nvml_error_text(const SymbolTable& api, nvmlReturn_t rc);

// Codes that mean "this metric is not available here", not "something is broken".
bool is_metric_unavailable(nvmlReturn_t rc);

}  // namespace gpureap::backend::nvml

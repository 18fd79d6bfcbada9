#pragma once
// NVML return codes turned into what a user can act on: what failed, why, what to do.
#include <cstddef>
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

// Whether nvmlInit's `rc` is what it answers when it could not open the driver's control device
// (/dev/nvidiactl) or another file: no driver, no permission, an operating-system error or an
// unknown one. Codes that name another cause (a version mismatch, a lost GPU) are not.
bool init_may_have_lacked_a_file(nvmlReturn_t rc);

// nvmlInit failed with `rc` while gpureap had `open` of its `limit` file descriptors open (its
// soft RLIMIT_NOFILE; `hard`, the hard one): the library had too few left to open the driver's
// control device, so the code says nothing of the driver or of permissions.
core::Error init_starved_error(nvmlReturn_t rc, const char* function, size_t open, size_t limit,
                               size_t hard);

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

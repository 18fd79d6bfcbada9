#pragma once
// The NVML backend over symbols from any resolver instead of a dlopen'ed library: lets a
// caller (a test, or a program that links NVML some other way) supply the functions.
#include <memory>
#include <string>

#include "backend/gpu_backend.h"
#include "backend/nvml/nvml_backend.h"
#include "backend/nvml/symbol_table.h"

namespace gpureap::backend::nvml {

// `library_label` is what BackendReport::library shows. options.library_path is ignored.
std::unique_ptr<GpuBackend> make_nvml_backend_from_resolver(const NvmlOptions& options,
                                                            SymbolResolver resolver,
                                                            std::string library_label);

}  // namespace gpureap::backend::nvml

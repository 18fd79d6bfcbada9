#pragma once
// Where `report` puts the page it drew (the single node's and the cluster's): a file, or
// stdout for "-".
#include <cstddef>
#include <string>

#include "core/result.h"

namespace gpureap::cli {

// Writes `html` to `out` ("-": stdout); the bytes written, or why it could not.
core::Result<size_t> write_page(const std::string& out, const std::string& html);

}  // namespace gpureap::cli

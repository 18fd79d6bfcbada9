#pragma once
// Memory sizes for options and config keys ("512MiB", "1GiB", "1.5G", "1000000"): one parser
// for every key that takes an amount of memory.
#include <cstdint>
#include <string_view>

#include "core/result.h"

namespace gpureap::core {

// A number (decimals allowed) and an optional unit: B; KiB MiB GiB TiB (powers of 1024, also
// written K M G T or KB MB GB TB, as the drivers' tools and most users mean them). A bare number is
// bytes. Negative, garbage or more than 2^63 bytes is an error that says how to write it.
core::Result<uint64_t> parse_byte_size(std::string_view text);

}  // namespace gpureap::core

#pragma once
// The GPU part of `ps`: the header table (one GPU a line, its memory split under it) that
// adapts to the terminal's width, and the compact form (`ps --compact`), one line per GPU with
// its users and their memory, as gpustat prints it.
#include <cstddef>
#include <optional>
#include <string>

#include "core/snapshot.h"
#include "output/style.h"

namespace gpureap::output {

struct GpuViewOptions {
  std::optional<size_t> width;  // terminal columns, when known
  bool unicode = true;          // the terminal speaks UTF-8
};

// The backends' lines, then every GPU. At 80 columns the memory bar narrows, then goes, before
// the used/total figure or the name is cut.
std::string render_gpu_section(const core::Snapshot& s, const Style& style,
                               const GpuViewOptions& options = {});
// `[0] H200 | 87 %  61 °C | 98.2/139.8 GiB | alice 8.0G (4242) bob 81.2G (5120)`.
std::string render_compact(const core::Snapshot& s, const Style& style,
                           const GpuViewOptions& options = {});

}  // namespace gpureap::output

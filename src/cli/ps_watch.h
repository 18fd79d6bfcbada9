#pragma once
// `gpureap ps --watch [INTERVAL]`: the ps screen re-rendered in place every interval, or with
// --json one snapshot per line (JSON lines) for logging pipelines.
#include "cli/cmd_ps.h"
#include "cli/global_options.h"

namespace gpureap::cli {

int run_ps_watch(const GlobalOptions& global, const PsOptions& options);

}  // namespace gpureap::cli

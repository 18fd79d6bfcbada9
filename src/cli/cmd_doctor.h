#pragma once
#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/global_options.h"
#include "core/gpu_place.h"

namespace gpureap::cli {

struct DoctorOptions {
  // --gpu as typed: "N", "N/G" (GPU N's GPU instance G) or a GPU's or instance's UUID;
  // `gpu` and `instance` are what it names, once resolved against the snapshot.
  std::optional<std::string> gpu_spec;
  std::optional<unsigned> gpu;
  std::optional<core::GpuPlace> instance;  // only where it names an instance
  std::string settle = "5s";
  std::vector<std::string> only;  // finding codes to keep; empty: all
  bool fix = false;
  bool yes = false;
  bool no_daemon = false;
  std::optional<std::string> unattributed_threshold;  // "1GiB", "2%", "1GiB,2%"
  bool verbose = false;                               // -v: the info findings too
  bool no_pager = false;                              // --no-pager: never through $PAGER / less
};

CLI::App* add_doctor_command(CLI::App& app, DoctorOptions& options);
// Exit: 0 nothing above info, 1 warnings, 2 critical (of the findings --only keeps), 3 gpureap
// could not run.
int run_doctor(const GlobalOptions& global, const DoctorOptions& options);

}  // namespace gpureap::cli

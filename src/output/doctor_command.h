#pragma once
// Everything `gpureap doctor` prints for its findings on a snapshot (output/command_output.h),
// for the command's own two samples and for the daemon's evidence alike.
#include <optional>
#include <vector>

#include "core/gpu_place.h"
#include "core/snapshot.h"
#include "doctor/finding.h"
#include "output/command_output.h"

namespace gpureap::output {

// The exit statuses of a doctor that ran (the cli's kDoctor* and kExitDriverTimeout).
inline constexpr int kDoctorExitHealthy = 0;   // nothing above info
inline constexpr int kDoctorExitWarnings = 1;  // warnings
inline constexpr int kDoctorExitCritical = 2;  // critical findings
inline constexpr int kDoctorExitDriverTimeout = 4;

struct DoctorRenderOptions {
  bool json = false;
  bool color = false;
  std::optional<unsigned> gpu;  // --gpu N: the summary counts that GPU only
  DaemonAge daemon_age;
  bool verbose = false;                    // -v: the info findings too
  size_t width = 0;                        // the terminal's columns to wrap to; 0: no wrapping
  bool unicode = true;                     // the locale speaks UTF-8
  bool fixing = false;                     // doctor --fix: no line pointing at --fix
  std::optional<core::GpuPlace> instance;  // --gpu N/G or N/G/C: with `gpu` N
};

int doctor_exit_code(doctor::Severity worst);

// The report (or the gpureap.doctor/v1 document) of `findings` on `last`, the driver-timeout
// lines on stderr, and the exit status the findings call for.
CommandOutput render_doctor_command(const core::Snapshot& last,
                                    const std::vector<doctor::Finding>& findings,
                                    const DoctorRenderOptions& options);

}  // namespace gpureap::output

#pragma once
// `gpureap doctor` output: a one-line summary of each problem, most severe first, then each
// problem's details (evidence, facets, meaning, remedy steps). The `gpureap.doctor/v1` JSON
// document is output/doctor_json.h.
#include <optional>
#include <string>
#include <vector>

#include "core/gpu_place.h"
#include "core/snapshot.h"
#include "doctor/finding.h"
#include "output/style.h"

namespace gpureap::output {

struct DoctorTextOptions {
  std::optional<unsigned> gpu;  // doctor --gpu N: the summary counts that GPU only
  bool verbose = false;         // -v: info findings too (else only counted)
  size_t width = 0;             // terminal columns to wrap to; 0: no wrapping (a pipe)
  bool fixing = false;          // doctor --fix: no line pointing at --fix
  bool unicode = true;          // the locale speaks UTF-8
  // doctor --gpu N/G (or N/G/C): the summary counts the processes in that instance only.
  std::optional<core::GpuPlace> instance;
};

std::string render_doctor(const core::Snapshot& s, const std::vector<doctor::Finding>& findings,
                          const Style& style, const DoctorTextOptions& options);
inline std::string render_doctor(const core::Snapshot& s,
                                 const std::vector<doctor::Finding>& findings, const Style& style,
                                 std::optional<unsigned> gpu = std::nullopt) {
  return render_doctor(s, findings, style, DoctorTextOptions{.gpu = gpu});
}
// The one-line summaries of the findings above info, as render_doctor begins with them (for
// what doctor can say before its second sample).
std::string render_doctor_summaries(const std::vector<doctor::Finding>& findings,
                                    const Style& style, const DoctorTextOptions& options);

}  // namespace gpureap::output

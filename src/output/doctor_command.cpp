#include "output/doctor_command.h"

#include "output/doctor_json.h"
#include "output/doctor_view.h"
#include "output/ps_render.h"
#include "output/snapshot_json.h"
#include "output/style.h"

namespace gpureap::output {

int doctor_exit_code(doctor::Severity worst) {
  return worst == doctor::Severity::Critical  ? kDoctorExitCritical
         : worst == doctor::Severity::Warning ? kDoctorExitWarnings
                                              : kDoctorExitHealthy;
}

CommandOutput render_doctor_command(const core::Snapshot& last,
                                    const std::vector<doctor::Finding>& findings,
                                    const DoctorRenderOptions& o) {
  CommandOutput r;
  if (o.json) {
    auto doc = doctor_to_json(last, findings);
    doc["source"] = source_json(o.daemon_age);
    r.out = dump_json(doc) + "\n";
  } else {
    Style style(o.color);
    r.out = render_doctor(last, findings, style,
                          {.gpu = o.gpu,
                           .verbose = o.verbose,
                           .width = o.width,
                           .fixing = o.fixing,
                           .unicode = o.unicode,
                           .instance = o.instance});
    if (o.daemon_age) r.out += style.paint(daemon_source_line(*o.daemon_age), Color::Dim) + "\n";
  }
  r.err = driver_timeout_lines(last);
  r.exit_code =
      r.err.empty() ? doctor_exit_code(doctor::worst(findings)) : kDoctorExitDriverTimeout;
  return r;
}

}  // namespace gpureap::output

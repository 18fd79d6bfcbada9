#include "doctor/examine.h"

#include "collect/collector.h"
#include "doctor/diagnose.h"

namespace gpureap::doctor {
namespace {

DoctorInput input_of(const Evidence& e, const Scope& scope, const IsProtected& is_protected) {
  static const procfs::IpcResidue kNone;
  return {.first = *e.first,
          .last = *e.last,
          .ipc = e.ipc ? *e.ipc : kNone,
          .gpu = scope.gpu,
          .is_protected = is_protected,
          .unattributed = scope.unattributed,
          .kernel = e.kernel.get(),
          .blocked = e.blocked,
          .work_server_log = e.work_server_log,
          .instance = scope.instance,
          .stalled_job_critical_after = scope.stalled_job_critical_after};
}

}  // namespace

std::vector<Finding> examine(const Evidence& evidence, const Scope& scope,
                             const IsProtected& is_protected) {
  auto found = diagnose(input_of(evidence, scope, is_protected));
  keep_codes(found, scope.only);
  if (scope.reader) show_restricted_evidence(found, *scope.reader);
  return found;
}

bool wants_work_server_log(const Evidence& evidence) {
  return wants_work_server_log(input_of(evidence, {}, nullptr));
}

Evidence read_evidence(const collect::Collector& collector,
                       std::shared_ptr<const core::Snapshot> first,
                       std::shared_ptr<const core::Snapshot> last,
                       std::shared_ptr<const procfs::IpcResidue> ipc) {
  Evidence e{std::move(first), std::move(last), std::move(ipc)};
  e.kernel = std::make_shared<const core::KernelLog>(collector.kernel_log(*e.last));
  e.blocked = collector.blocked_tasks(*e.last);
  if (wants_work_server_log(e)) e.work_server_log = collector.work_server_log(*e.last);
  return e;
}

}  // namespace gpureap::doctor

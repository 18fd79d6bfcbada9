#pragma once
// The page of one `gpureap run` job: memory per GPU over the job's life (the job's processes
// and everything else on the GPU), when the command exited, when teardown ended, when the
// memory came back.
#include "report/page.h"
#include "supervise/run_report.h"

namespace gpureap::report {

Page build_run_page(const supervise::RunReport& report, TimePoint generated);

}  // namespace gpureap::report

#pragma once
// The distributed jobs with a rank gone (doctor's stalled-job) that a view's rows belong to,
// for every view that ends with advice: the ps footer, top's status line.
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/snapshot.h"

namespace gpureap::output {

struct StalledJobNotice {
  pid_t launcher = 0;
  uint64_t bytes = 0;   // what its live ranks hold
  std::string summary;  // doctor's one line, terminal-safe
  std::string command;  // the command that ends the whole job
};

// Of the jobs a row of `s` belongs to; `s` alone is the sample (a one-sample look).
std::vector<StalledJobNotice> stalled_job_notices(const core::Snapshot& s);

}  // namespace gpureap::output

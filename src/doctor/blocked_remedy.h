#pragma once
// What doctor says about a holder in uninterruptible sleep (D): where it waits (wait channel,
// kernel stack), for how long it has been seen there, what it waits on (a FUSE connection, an
// NFS server, the GPU driver) and the fix that really ends it.
#include "doctor/diagnose.h"
#include "doctor/finding.h"

namespace gpureap::doctor {

// Adds the evidence, explanation and remedy of PID `pid`'s D-state finding.
void explain_blocked(const DoctorInput& in, const core::HostProcess& p, Finding& f);

}  // namespace gpureap::doctor

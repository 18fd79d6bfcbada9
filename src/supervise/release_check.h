#pragma once
// After teardown: is the job's GPU memory back? Through the driver when it answers (no job
// PID left in its process lists), and in any case no live job process may still hold a GPU
// device file (without a driver that is the whole check). Teardown in the driver is
// asynchronous, so this polls until released or --release-timeout.
#include <chrono>
#include <functional>

#include "supervise/job_sampling.h"
#include "supervise/job_usage.h"
#include "supervise/run_report.h"

namespace gpureap::supervise {

// Sleeps up to the given time while the caller keeps reaping; false: stop waiting (the user
// sent a terminating signal).
using Pause = std::function<bool(std::chrono::milliseconds)>;

ReleaseCheck verify_release(JobSampling& sampling, const IsJobProcess& is_job,
                            std::chrono::milliseconds timeout, const Pause& pause);

// One snapshot's verdict (pure): fills method, memory, files, released and error. Without a
// driver only a scan that read every file of the job's processes answers that none holds one.
void judge_release(const core::Snapshot& snapshot, const IsJobProcess& is_job, ReleaseCheck& check);

}  // namespace gpureap::supervise

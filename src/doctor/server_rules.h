#pragma once
// Findings about servers of other processes' GPU work (a backend's WorkServer): a gone client
// whose work a live server still runs, and a server the kernel log says hit a fault.
#include <optional>

#include "core/kernel_event.h"
#include "doctor/diagnose.h"

namespace gpureap::doctor {

// A gone client kept by a server (Ghost::servers): one finding, whose remedy is the vendor's
// own (end the client's work on the server, or restart the servers), never a signal.
Finding served_ghost(const DoctorInput& in, const core::ProcessRow& r, const core::Ghost& ghost);

// The live server `e` names, when the process at its PID is one and was running at the event's
// time (a log's PID names a process only if it had started by then).
const core::ProcessRow* server_hit(const core::KernelGpuEvent& e, const core::Snapshot& s);
// Makes `f` (the kernel-log finding of the server's GPU) say that the server hit `e`: its summary,
// what it means for the clients, the server's log as evidence, restarting the servers first.
void server_fault(const DoctorInput& in, const core::KernelGpuEvent& e,
                  const core::ProcessRow& server, Finding& f);

}  // namespace gpureap::doctor

#include "kernel/nvidia/xid_catalog.h"

#include <algorithm>
#include <array>

namespace gpureap::kernel::nvidia {
namespace {

using L = core::KernelEventLevel;

// Source: NVIDIA, "Xid Errors" (GPU Deployment and Management Documentation,
// https://docs.nvidia.com/deploy/xid-errors/), its Xid table and "Xid Error Listing": the name
// and possible causes are NVIDIA's, shortened; the actions follow its recommended steps. Keep
// this sorted by number; add an Xid here and nowhere else.
constexpr std::array kCatalog = {
    XidEntry{13, "Graphics Engine Exception",
             "usually the application (an out-of-range access, an illegal instruction); rarely "
             "the driver or the hardware",
             "check the process it names (compute-sanitizer); if it recurs on one GPU across "
             "applications, test the GPU",
             L::Warning, true, false},
    XidEntry{31, "GPU memory page fault",
             "usually the application accessing an illegal address; rarely the driver",
             "check the process it names: debug its memory accesses (compute-sanitizer)",
             L::Warning, true, false},
    XidEntry{32, "Invalid or corrupted push buffer stream",
             "the driver, system memory corruption, a bus error or the application",
             "check the process it names; if it recurs, check the PCIe link and system memory",
             L::Warning, false, false},
    XidEntry{38, "Driver firmware error", "the driver or its firmware",
             "update the driver; reset the GPU if it stops responding", L::Warning, false, false},
    XidEntry{43, "GPU stopped processing",
             "the application hit a fault (often after another Xid); the GPU itself is healthy",
             "check the process it names; nothing to do for the GPU", L::Warning, true, false},
    XidEntry{45, "Preemptive cleanup, due to previous errors",
             "the driver ended a context after earlier errors, or the process was killed while "
             "running work; often seen with contexts that stay behind",
             "look at the Xids before it; make sure the process's memory is released", L::Info,
             false, false},
    XidEntry{48, "Double Bit ECC Error", "an uncorrectable memory error in the GPU's memory",
             "reset the GPU (or reboot) once nothing runs on it; if it recurs, have the GPU "
             "replaced",
             L::Critical, false, false},
    XidEntry{61, "Internal micro-controller breakpoint/warning", "the GPU's firmware",
             "reset the GPU if it stops responding; update the driver", L::Warning, false, false},
    XidEntry{62, "Internal micro-controller halt", "the GPU's firmware halted",
             "reset the GPU (or reboot)", L::Critical, false, false},
    XidEntry{63, "ECC page retirement or row remapping recording event",
             "the GPU recorded a bad memory page or row to retire or remap",
             "reset the GPU (or reboot) when convenient so the retirement takes effect", L::Warning,
             false, false},
    XidEntry{64, "ECC page retirement or row remapper recording failure",
             "the GPU could not record a bad memory page or row",
             "reset the GPU, then check "
             "`nvidia-smi -q -d ROW_REMAPPER`; have the GPU replaced if it recurs",
             L::Critical, false, false},
    XidEntry{68, "Video processor exception",
             "the video decoder (NVDEC), the driver or the "
             "application",
             "check the process it names", L::Warning, true, false},
    XidEntry{69, "Graphics Engine class error", "the application or the driver",
             "check the process it names", L::Warning, true, false},
    XidEntry{74, "NVLink Error", "a fault on an NVLink connection (hardware, cabling, bridge)",
             "check `nvidia-smi nvlink -s`; reset the GPUs of the link; have the link checked "
             "if it recurs",
             L::Critical, false, false},
    XidEntry{79, "GPU has fallen off the bus",
             "the GPU no longer answers on PCIe: hardware, power, thermal or a driver fault",
             "reboot the machine (a GPU reset cannot reach it); check power, cooling and seating "
             "if it recurs",
             L::Critical, false, true},
    XidEntry{92, "High single-bit ECC error rate", "the GPU's memory corrects many errors",
             "watch it; reset the GPU when convenient; have it checked if it continues", L::Warning,
             false, false},
    XidEntry{94, "Contained ECC error",
             "an uncorrectable memory error that the GPU contained to the application using it",
             "that application was stopped, others are unaffected; reset the GPU when "
             "convenient so the memory is remapped",
             L::Warning, false, false},
    XidEntry{95, "Uncontained ECC error",
             "an uncorrectable memory error that affects every application on the GPU",
             "drain the GPU and reboot (a reset of the GPU alone may not recover it)", L::Critical,
             false, true},
    XidEntry{109, "Context Switch Timeout Error",
             "the application, the driver or the hardware did not yield in time",
             "check the process it names; reset the GPU if it recurs", L::Warning, true, false},
    XidEntry{119, "GSP RPC Timeout", "the GPU System Processor (firmware) did not answer",
             "reset the GPU (or reboot); update the driver; if it recurs, try the driver with "
             "GSP firmware disabled (NVreg_EnableGpuFirmware=0) where supported",
             L::Critical, false, false},
    XidEntry{120, "GSP Error", "the GPU System Processor (firmware) reported an error",
             "reset the GPU (or reboot); update the driver", L::Critical, false, false},
};

static_assert(std::is_sorted(kCatalog.begin(), kCatalog.end(),
                             [](const XidEntry& a, const XidEntry& b) { return a.xid < b.xid; }));

}  // namespace

const XidEntry* find_xid(unsigned xid) {
  auto it = std::lower_bound(kCatalog.begin(), kCatalog.end(), xid,
                             [](const XidEntry& e, unsigned x) { return e.xid < x; });
  return it != kCatalog.end() && it->xid == xid ? &*it : nullptr;
}

std::span<const XidEntry> xid_catalog() {
  return kCatalog;
}

}  // namespace gpureap::kernel::nvidia

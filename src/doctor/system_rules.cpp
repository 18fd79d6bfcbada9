// Findings about gpureap's view itself: the driver, its process records, permissions. Each
// vendor's commands and names come from its backend's registry entry.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "backend/registry.h"
#include "doctor/diagnose.h"
#include "doctor/evidence.h"

namespace gpureap::doctor {

namespace {

const backend::VendorWords kNoWords{};

// A step of a rule's remedy: Run for the first, Then after.
StepKind next_kind(const std::vector<RemedyStep>& remedy) {
  return remedy.empty() ? StepKind::Run : StepKind::Then;
}
StepKind next_step(const Finding& f) {
  return next_kind(f.remedy);
}

// What a backend that did not answer says, by its error code: each code is given its finding
// here on purpose (-Wswitch-enum), so a new one is never taken for a missing driver unread.
enum class BackendDown {
  NotDown,       // nothing is wrong: the machine has no GPU of its kind
  Mismatch,      // the library and the loaded driver differ (driver-mismatch)
  NotAnswering,  // a call did not return (driver-not-answering)
  NoLibrary,     // its library was not found, or lacks what gpureap needs (driver-missing)
  Unusable,      // the library loaded, but the driver cannot be used (driver-missing)
  NoAccess,      // the devices are not open to gpureap's user: says nothing of the driver
  OwnShortage,   // gpureap itself ran out of descriptors or memory: says nothing of the driver
};

BackendDown backend_down_kind(const core::BackendStatus& b) {
  if (b.available) return BackendDown::NotDown;
  if (!b.error_code) return BackendDown::NoLibrary;
  switch (*b.error_code) {
    case core::BackendErrorCode::NoDevice:
      return BackendDown::NotDown;
    case core::BackendErrorCode::VersionMismatch:
      return BackendDown::Mismatch;
    case core::BackendErrorCode::NotAnswering:
      return BackendDown::NotAnswering;
    case core::BackendErrorCode::OutOfResources:
      return BackendDown::OwnShortage;
    case core::BackendErrorCode::NoPermission:
      return BackendDown::NoAccess;
    case core::BackendErrorCode::LibraryNotFound:
    case core::BackendErrorCode::SymbolMissing:
    case core::BackendErrorCode::NotConfigured:
      return BackendDown::NoLibrary;
    case core::BackendErrorCode::DriverNotLoaded:
    case core::BackendErrorCode::InitFailed:
    case core::BackendErrorCode::Internal:
      return BackendDown::Unusable;
  }
  return BackendDown::Unusable;  // no enumerator: the driver cannot be used, that much is known
}

// One backend that does not answer or cannot be used (`kind`: Mismatch, NotAnswering,
// NoLibrary or Unusable), worded by its registry entry.
Finding backend_down(const core::Snapshot& s, const core::BackendStatus& b, BackendDown kind,
                     const backend::BackendEntry* entry) {
  Finding f;
  const backend::VendorWords& w = entry ? entry->words : kNoWords;
  const std::string vendor = w.vendor.empty() ? b.vendor : w.vendor;
  const std::string library = w.library.empty() ? b.label() : w.library;
  std::string error = b.error.value_or("no GPU backend");
  f.evidence.push_back(b.label() + ": " + error);
  if (kind == BackendDown::Mismatch) {
    f.code = FindingCode::DriverMismatch;
    f.severity = Severity::Critical;
    f.explanation = "The " + library +
                    " library and the loaded kernel driver have different versions: the driver was "
                    "upgraded without reloading the kernel module." +
                    (w.mismatch_effect.empty() ? "" : " " + w.mismatch_effect);
    f.remedy = {{StepKind::Run, "reboot", "loads the new driver"}};
    if (!w.reload_driver.empty())
      f.remedy.push_back({StepKind::Or, w.reload_driver, "with no GPU process running"});
    f.summary = library + " and the loaded " + (vendor.empty() ? "" : vendor + " ") +
                "driver have different versions";
  } else if (kind == BackendDown::NotAnswering) {
    f.code = FindingCode::DriverNotAnswering;
    f.severity = Severity::Critical;
    f.explanation =
        "A call into the GPU driver did not return: the driver is wedged or a GPU fell off the "
        "bus. "
        "Processes that use the GPU may hang in the driver too (state D); only device-file "
        "holders "
        "are shown.";
    if (!w.driver_log_grep.empty())
      f.remedy.push_back(w.driver_log_grep + "   # shows what the driver said");
    f.remedy.push_back({next_step(f), "gpureap doctor --driver-timeout 30s", "if it is only slow"});
    f.remedy.push_back({StepKind::Or, "reboot", "if it stays wedged"});
    f.summary = b.label() + " does not answer: the GPU driver is wedged";
  } else {
    f.code = FindingCode::DriverMissing;
    const auto& present = s.proc.driver_device_files;
    const bool has_nodes = std::find(present.begin(), present.end(), b.name) != present.end();
    f.severity = has_nodes ? Severity::Warning : Severity::Info;
    // The library that may live elsewhere: the option that names it, unless it was loaded.
    auto library_steps = [&](const std::string& check_why) {
      if (!w.check_driver.empty()) f.remedy.push_back(w.check_driver + "   # " + check_why);
      if (entry && entry->library && kind == BackendDown::NoLibrary)
        f.remedy.push_back({f.remedy.empty() ? StepKind::Run : StepKind::Or,
                            "gpureap --" + entry->library->option + " " + entry->library->example,
                            "if " + library + " lives elsewhere"});
    };
    if (!entry || !entry->library) {
      // A backend that reads the kernel alone: no library to find.
      f.explanation = b.label() + " cannot be used; the GPUs it would report are not shown.";
      f.summary = b.label() + " cannot be used: " + error;
    } else if (has_nodes) {
      f.explanation = vendor + " device files exist but " + library +
                      " cannot be used, so GPU memory cannot be attributed; only device-file "
                      "holders are shown.";
      library_steps("does the driver answer?");
      f.summary = vendor + " device files exist but " + library + " cannot be used";
    } else if (!s.drivers.gpus.empty()) {
      // A machine with other vendors' GPUs only: nothing about this vendor is wrong here.
      f.explanation = fmt::format(
          "No {} device node exists, so {} is not needed: the {} shown come from the other "
          "backends.",
          vendor, b.label(), s.drivers.gpus.size() == 1 ? "GPU" : "GPUs");
      f.summary = b.label() + " is not loaded: this machine has no " + vendor + " device";
    } else {
      f.explanation =
          "No GPU driver gpureap knows is usable on this machine; it shows the processes that "
          "hold GPU device files only.";
      library_steps("on an " + vendor + " machine: does the driver answer?");
      f.summary = "no GPU driver is usable: device-file holders only";
    }
  }
  return f;
}

// The devices a backend's library opens are not open to gpureap's user (a backend's no-permission:
// device files of mode 0660 and another group, a container not given them): the driver is
// fine, and what gpureap sees is the view of a user who may not use the GPUs.
Finding no_device_access(const core::BackendStatus& b, const backend::BackendEntry* entry) {
  const backend::VendorWords& w = entry ? entry->words : kNoWords;
  const std::string library = w.library.empty() ? b.label() : w.library;
  const std::string vendor = w.vendor.empty() ? b.vendor : w.vendor;
  return {FindingCode::IncompleteView,
          Severity::Warning,
          {},
          {},
          0,
          {b.label() + ": " + b.error.value_or("no permission")},
          "gpureap's user may not open the " + vendor + " devices, so " + library +
              " cannot report GPU memory or the processes that use it: only the device-file "
              "holders gpureap can read are shown. This says nothing of the driver.",
          {"sudo gpureap doctor   # root may open the devices",
           {StepKind::Or, "run gpureap where the devices are open to it",
            "their group, or a container given them"}},
          "gpureap may not open the " + vendor + " devices: " + library + " cannot be used"};
}

// What gpureap ran short of, as a finding says it: what it lacked, and the summary's noun.
struct ShortageWords {
  const char* lacked;
  const char* noun;
};

ShortageWords words_of(core::Shortage k) {
  switch (k) {
    case core::Shortage::OwnDescriptors:
      return {"a file descriptor of its own (its limit of open files)", "file descriptors"};
    case core::Shortage::SystemFiles:
      return {"a file: the system's table of open files was full",
              "open files (the system's table was full)"};
    case core::Shortage::Memory:
      return {"memory", "memory"};
  }
  return {"a resource", "resources"};  // no enumerator
}

// Each kind's own remedy, in the enum's order: gpureap's limit of open files, the system's
// table of open files (which root's processes may exceed, so only others meet it), memory.
std::vector<RemedyStep> shortage_remedy(const std::set<core::Shortage>& kinds) {
  std::vector<RemedyStep> out;
  for (core::Shortage k : kinds) {
    const StepKind first = next_kind(out);
    switch (k) {
      case core::Shortage::OwnDescriptors:
        out.push_back({first, "ulimit -n 1024; gpureap doctor", "a higher limit of open files"});
        out.push_back({StepKind::Or, "LimitNOFILE=1024", "in the systemd unit that runs gpureap"});
        break;
      case core::Shortage::SystemFiles:
        out.push_back({first, "cat /proc/sys/fs/file-nr",
                       "the machine's open files, and its limit (the third figure)"});
        out.push_back({StepKind::Then,
                       "sudo sysctl -w fs.file-max=$((2 * $(cut -f3 /proc/sys/fs/file-nr)))",
                       "doubles the limit; or end what holds the most files"});
        break;
      case core::Shortage::Memory:
        out.push_back({first, "free -h", "what memory the machine has left"});
        out.push_back({StepKind::Or, "ulimit -v unlimited; gpureap doctor",
                       "where gpureap's own limit of memory is the one reached"});
        break;
    }
  }
  return out;
}

// "A, B and C".
std::string listed(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i)
    out += (i == 0 ? "" : i + 1 == items.size() ? " and " : ", ") + items[i];
  return out;
}

std::string lacked(const std::set<core::Shortage>& kinds) {
  std::vector<std::string> words;
  for (core::Shortage k : kinds) words.emplace_back(words_of(k).lacked);
  return listed(words);
}

// What gpureap could not read or load for want of descriptors or memory: the holder scan's
// failures and the drivers' libraries it could not load. One finding: they say nothing of the
// driver or the processes, and the remedy follows what ran short (gpureap's own limit, the
// system's table of open files, memory), each said once however many reads met it.
void own_shortage(const DoctorInput& in, std::vector<Finding>& out) {
  const auto& s = in.last;
  std::vector<std::string> evidence, libraries;
  std::set<core::Shortage> library_kinds;
  for (const auto& b : s.drivers.backends) {
    if (backend_down_kind(b) != BackendDown::OwnShortage) continue;
    const auto* entry = backend::find_backend(b.name, in.backends);
    libraries.push_back(entry && !entry->words.library.empty() ? entry->words.library : b.label());
    evidence.push_back(b.label() + ": " + b.error.value_or("out of resources"));
    // A backend that said no kind ran out of what a library's load needs: a descriptor.
    library_kinds.insert(b.shortage.value_or(core::Shortage::OwnDescriptors));
  }
  evidence.insert(evidence.end(), s.proc.scan_failures.begin(), s.proc.scan_failures.end());
  if (evidence.empty()) return;
  std::set<core::Shortage> scan_kinds(s.proc.scan_shortages.begin(), s.proc.scan_shortages.end());
  // A failure that named no kind (a listing of /proc refused) is told as a limit of files.
  if (!s.proc.scan_failures.empty() && scan_kinds.empty())
    scan_kinds.insert(core::Shortage::OwnDescriptors);
  std::set<core::Shortage> kinds = library_kinds;
  kinds.insert(scan_kinds.begin(), scan_kinds.end());
  std::vector<std::string> nouns;
  for (core::Shortage k : kinds) nouns.emplace_back(words_of(k).noun);

  std::string explanation, summary;
  if (!libraries.empty()) {
    explanation = "gpureap could not load " + listed(libraries) + " for want of " +
                  lacked(library_kinds) +
                  ": this says nothing of the GPU driver, but GPU memory cannot be attributed "
                  "until gpureap can load it; only device-file holders are shown.";
    summary =
        "gpureap ran out of " + listed(nouns) + ": " + listed(libraries) + " could not be loaded";
  }
  if (!s.proc.scan_failures.empty()) {
    explanation += std::string(explanation.empty() ? "" : " ") +
                   "gpureap could not read every process's open files although it may, for "
                   "want of " +
                   lacked(scan_kinds) +
                   ". Holders may be missing and no leak can be proven until it can.";
    summary += summary.empty() ? "the holder scan failed: holders may be missing"
                               : ", and holders may be missing";
  }
  out.push_back({FindingCode::IncompleteView,
                 Severity::Warning,
                 {},
                 {},
                 0,
                 std::move(evidence),
                 std::move(explanation),
                 shortage_remedy(kinds),
                 std::move(summary)});
}

}  // namespace

void driver_rules(const DoctorInput& in, std::vector<Finding>& out) {
  const auto& s = in.last;
  for (const auto& b : s.drivers.backends) {
    const BackendDown kind = backend_down_kind(b);
    // Not down, or gpureap's own shortage (own_shortage): no finding of the driver's.
    if (kind == BackendDown::NotDown || kind == BackendDown::OwnShortage) continue;
    if (kind == BackendDown::NoAccess) {
      out.push_back(no_device_access(b, backend::find_backend(b.name, in.backends)));
      continue;
    }
    out.push_back(backend_down(s, b, kind, backend::find_backend(b.name, in.backends)));
  }
  own_shortage(in, out);
  for (const auto& g : s.drivers.gpus) {
    if (in.gpu && *in.gpu != g.index) continue;
    const auto* entry = backend::find_backend(g.backend, in.backends);
    const backend::VendorWords& w = entry ? entry->words : kNoWords;
    if (g.error) {
      std::vector<RemedyStep> remedy;
      if (!w.driver_log_grep.empty())
        remedy.push_back(w.driver_log_grep + "   # shows the driver's errors");
      if (!w.gpu_query.empty())
        remedy.push_back({remedy.empty() ? StepKind::Run : StepKind::Then,
                          backend::fill_gpu(w.gpu_query, g.backend_index),
                          "shows what the driver knows of it"});
      out.push_back({FindingCode::GpuError,
                     Severity::Critical,
                     {g.index},
                     {},
                     0,
                     {fmt::format("GPU {}: {}", g.index, *g.error)},
                     "The driver cannot read this GPU; its memory and processes are unknown.",
                     remedy,
                     fmt::format("GPU {} cannot be read: {}", g.index, *g.error)});
    }
    if (g.processes_error) {
      std::vector<RemedyStep> remedy;
      if (!w.process_query.empty()) remedy.push_back(w.process_query + "   # lists them instead");
      remedy.push_back({next_kind(remedy), "report the driver version to the gpureap project", ""});
      out.push_back(
          {FindingCode::DriverRecordLayout,
           Severity::Warning,
           {g.index},
           {},
           0,
           {fmt::format("GPU {}: {}", g.index, *g.processes_error)},
           "The driver's process records did not pass validation (an " +
               (w.library.empty() ? std::string("driver") : w.library) +
               " ABI gpureap does not recognise), so they are not shown rather than shown wrong.",
           remedy,
           fmt::format("GPU {}: the driver's process records are not understood", g.index)});
    }
  }
  // A failed scan is said by own_shortage (with a driver library not loaded for the same want).
  if (s.proc.scan_failures.empty() && !s.complete()) {
    out.push_back(
        {FindingCode::IncompleteView,
         Severity::Warning,
         {},
         {},
         0,
         {fmt::format("{} processes could not be inspected (their open files are not readable)",
                      s.proc.uninspectable)},
         "Without root (or CAP_SYS_PTRACE) gpureap cannot see other users' open device files, "
         "so holders may be missing and no leak can be proven.",
         {"sudo gpureap doctor   # sees every process's open files"},
         fmt::format("{} processes could not be inspected: holders may be missing",
                     s.proc.uninspectable)});
  }
}

}  // namespace gpureap::doctor

#pragma once
// Everything `gpureap run` learnt about one job: how it ended, what it held on the GPUs,
// what gpureap had to end after it, and whether the memory came back. The stderr summary
// and the `gpureap.run/v1` JSON are two renderings of this one struct.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"

namespace gpureap::supervise {

// Why the job is over, as far as gpureap's exit code is concerned.
enum class EndCause {
  Exited,         // CMD exited: its status
  Signaled,       // CMD died of a signal: 128+N
  TimedOut,       // --timeout expired: 124
  NotFound,       // CMD does not exist: 127
  NotExecutable,  // CMD exists but cannot be executed: 126
  StartFailed,    // gpureap failed before CMD ran: 125
};
const char* to_string(EndCause cause);

struct JobExit {
  EndCause cause = EndCause::StartFailed;
  int code = 125;                    // what gpureap exits with
  std::optional<int> status;         // CMD's exit status
  std::optional<int> signal;         // the signal CMD died of
  std::optional<core::Error> error;  // why CMD could not start (or end), with what to do
};

// What made gpureap end the job before CMD finished on its own.
enum class StopReason { None, Signal, Timeout, FailFast };
struct StopRequest {
  StopReason reason = StopReason::None;
  std::optional<int> signal;                       // the signal gpureap received
  std::optional<std::chrono::milliseconds> after;  // since CMD started
  bool killed_after_grace = false;                 // SIGKILL was needed
};

// --fail-fast: the first process of the job seen to exit abnormally while CMD ran.
struct FailedProcess {
  pid_t pid = 0;
  std::string comm;
  std::optional<int> status;        // its exit status, when not 0
  std::optional<int> signal;        // the signal it died of
  std::chrono::milliseconds at{0};  // since CMD started (when gpureap saw it)
  bool ended_job = false;           // gpureap ended the job for it (others still held GPU files)
};

// A process of the job that gpureap ended (or failed to end) itself.
struct Leftover {
  pid_t pid = 0;
  std::string comm;
  std::vector<std::string> cmdline;  // empty for kernel-less reads (the process had gone)
  std::vector<std::string> devices;  // GPU device files it held when CMD exited
  std::vector<int> signals;          // sent by gpureap, in order (SIGTERM, SIGCONT, SIGKILL)
  bool ended = false;                // gone when gpureap finished
};

struct GpuPeak {
  unsigned index = 0;
  std::optional<std::string> name;
  std::optional<std::string> uuid;
  uint64_t peak_bytes = 0;
  std::chrono::milliseconds at{0};  // since CMD started
  size_t processes = 0;             // job processes listed on this GPU at the peak
};

// One GPU at one sample: what the job's processes held, beside what the GPU had in use. The
// page of `run --report FILE.html` draws these; thinned evenly over a long job (bounded).
struct GpuTimelinePoint {
  std::chrono::system_clock::time_point at;
  unsigned gpu = 0;
  uint64_t job_bytes = 0;
  std::optional<uint64_t> used_bytes;
  std::optional<uint64_t> total_bytes;
};

struct GpuSampling {
  std::string backend = "nvml";
  bool available = false;                 // the backend answered at least once
  std::optional<std::string> error;       // the backend's last error, when it never answered
  std::optional<std::string> error_code;  // its stable name: library-not-found, ...
  std::chrono::milliseconds interval{0};
  unsigned samples = 0;
  std::vector<GpuPeak> peaks;              // one per GPU the job used, by index
  std::vector<GpuTimelinePoint> timeline;  // every GPU, every kept sample, oldest first
};

// Memory the driver still lists for a job process after teardown.
struct HeldMemory {
  unsigned gpu = 0;
  pid_t pid = 0;
  std::optional<uint64_t> used_bytes;
  bool process_alive = false;
  std::vector<std::string> anomalies;  // from the join: "leaked", "no-such-process", ...
};

// A live job process that still holds GPU device files after teardown.
struct HeldFiles {
  pid_t pid = 0;
  std::string comm;
  std::vector<std::string> paths;
};

struct ReleaseCheck {
  bool performed = false;
  std::optional<std::string> skipped_because;
  std::string method;  // "driver" (its lists) or "device-files" (no driver answered)
  bool released = false;
  std::optional<std::chrono::milliseconds> took;  // from the end of teardown
  std::chrono::milliseconds timeout{0};
  std::vector<HeldMemory> memory;
  std::vector<HeldFiles> files;
  // Set when no driver answered and the device-file scan could not read every file the job's
  // processes may hold (gpureap out of file descriptors, a job process it may not inspect): why,
  // and what to do. `released` is then false: nothing was seen held, but that is no release.
  std::optional<core::Error> error;
};

struct RunReport {
  std::vector<std::string> command;
  std::optional<pid_t> pid;
  std::chrono::system_clock::time_point started_at;
  std::chrono::system_clock::time_point ended_at;
  std::chrono::milliseconds runtime{0};   // CMD start to CMD exit
  std::chrono::milliseconds teardown{0};  // CMD exit to the last leftover gone
  JobExit exit;
  StopRequest stop;
  std::optional<FailedProcess> failed;  // --fail-fast
  GpuSampling gpu;
  std::vector<Leftover> leftovers;  // ended by gpureap (or that survived it)
  std::vector<Leftover> kept;       // --keep-descendants: left running
  // Set when the job's processes could not be read at the end of teardown (gpureap out of file
  // descriptors): what leftovers and kept say is the last read's, and a process the job started
  // since may run on; gpureap cannot say the job is gone.
  std::optional<core::Error> teardown_error;
  ReleaseCheck release;
  bool interactive = false;  // the job had the terminal's foreground
  bool pid1 = false;         // gpureap was its PID namespace's init
  std::vector<std::string> warnings;
};

}  // namespace gpureap::supervise

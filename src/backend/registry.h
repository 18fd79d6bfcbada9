#pragma once
// The one list of GPU backends gpureap knows, and everything the rest of the program knows of a
// vendor: its device nodes, its driver library's option, its kernel-log parser, its reset tool
// and the words of its remedies. Adding a vendor is one folder under src/backend (and
// src/kernel for a log parser) and one line in builtin_backends(); the device catalogue, the
// collector, doctor and `reset` read these entries and name no vendor themselves.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backend/gpu_backend.h"
#include "backend/settings.h"
#include "kernel/blocked_task.h"
#include "kernel/gpu_events.h"
#include "procfs/device_files.h"

namespace gpureap::backend {

// The driver library a user may name on the command line (--<option> PATH).
struct LibraryOption {
  std::string option;   // the long option without dashes: its value is settings.libraries[name]
  std::string env;      // the environment variable read when the option is not given
  std::string help;     // the option's help text
  std::string example;  // "/path/to/lib.so.1", for remedies
};

// `gpureap reset`: the vendor's tool that resets one GPU.
struct ResetTool {
  std::string program;  // found on PATH
  // Its arguments for the GPU with this backend id.
  std::function<std::vector<std::string>(unsigned backend_index)> arguments;
  std::string missing_hint;  // what to install when the program is not on PATH
  // Its complaint turned into the next step; `gpu` is the global index.
  std::function<std::string(const std::string& output, unsigned gpu)> failure_hint;
};

// The words doctor and `reset` use for this vendor's driver; an empty one is not said.
struct VendorWords {
  std::string vendor;           // the vendor as people write it
  std::string library;          // its driver library as people write it, where it has one
  std::string check_driver;     // a command that shows whether the driver answers
  std::string driver_log_grep;  // a command that shows what the driver logged
  std::string gpu_query;        // a command that shows what the driver knows of GPU {gpu}
  std::string process_query;    // a command that lists the driver's processes
  std::string reload_driver;    // a command that reloads the kernel modules
  std::string mismatch_effect;  // what a library/driver version mismatch breaks
  // The command that resets GPU {gpu} (its minor: {minor}); empty: only a reboot does.
  std::string reset;
};

// A program of the vendor's that runs other processes' GPU work in its own context: the driver
// lists it with its own memory, and its clients in a list of their own (kind ServerClient). Anyone
// can name a program so, so a listed process is taken for one only when the program it runs
// (/proc/PID/exe) has this name and its parent runs `parent_program` (collect/work_servers); what
// the claim changes is bounded there.
struct WorkServer {
  std::string program;         // the server's executable's name
  std::string parent_program;  // the daemon that starts it: its parent's executable's name
  std::string name;            // as people call it, for findings and ps
  // Ends one client's work on a server ({server}, {client}: their PIDs); empty: none can.
  std::string end_client;
  std::string restart;         // restarts the servers (each step one command, in order)
  std::string restart_effect;  // what a restart costs
  // Its daemon's log folder under the runtime root, and the files in it worth reading.
  std::string log_dir;
  std::vector<std::string> log_files;
  // The environment variable of its daemon that moves that folder elsewhere ("" for none).
  std::string log_dir_variable;
  // What of its daemon's environment `restart` needs to find that daemon ("" for nothing).
  std::string environment;
};

// A file the vendor's GPU job libraries leave in /dev/shm when their job is killed: who makes
// it, and the shape of its whole name (an ECMAScript regular expression).
struct ShmFileKind {
  std::string maker;  // "NCCL"
  std::string name;   // "nccl-[A-Za-z0-9]{6}"
};

struct BackendEntry {
  std::string name;    // the backend's name in reports, JSON and metrics
  std::string vendor;  // the vendor of its GPUs, lower case
  // It calls into a vendor library, which blocks forever on a wedged driver: each instance is
  // then called behind a watchdog. A backend that reads only kernel files (fdinfo, sysfs) and
  // takes part in the holder scan is called directly.
  bool calls_driver_library = true;
  std::function<std::unique_ptr<GpuBackend>(const BackendSettings&)> make;
  // The vendor's GPUs as its kernel module describes them, without its library (identity and
  // device files, nothing measured): a backend that does not answer still reports which device
  // file is which GPU. Empty for a vendor whose backend reads the kernel alone anyway.
  std::function<std::vector<core::Gpu>(const BackendSettings&)> kernel_gpus;
  // The device nodes its driver makes (DeviceNode::backend is filled from `name`).
  procfs::DeviceNodes device_nodes;
  std::optional<LibraryOption> library;
  std::optional<kernel::KernelLogParser> kernel_log;
  std::optional<ResetTool> reset;
  // The prefixes of its kernel modules' functions: a process in D state whose wait channel or
  // stack is in one of them waits inside the driver.
  std::vector<std::string> kernel_functions;
  // Its daemons that hold GPUs by design (persistence, monitoring): gpureap never ends them
  // unless named (reap/safety).
  std::vector<std::string> protected_programs;
  VendorWords words;
  std::optional<WorkServer> work_server;
  // What its libraries leave in /dev/shm (doctor's ipc-residue).
  std::vector<ShmFileKind> shm_files;
};

using Registry = std::vector<BackendEntry>;

// Every backend gpureap ships, in the order their GPUs are numbered.
const Registry& builtin_backends();

// The entry named `name` in `registry` (null: the built-in one), or null.
const BackendEntry* find_backend(std::string_view name, const Registry* registry = nullptr);
// Every entry's device nodes, each kind once (the first entry that names it owns it).
procfs::DeviceNodes device_nodes(const Registry& registry);
// Every entry's kernel-log parser, each kind once.
std::vector<kernel::KernelLogParser> kernel_log_parsers(const Registry& registry);
// A kernel-log kind as people write it before a code: its parser's label, else the kind itself
// (a kind of a vendor this build does not know, read from another node's metrics).
std::string kernel_kind_label(std::string_view kind, const Registry* registry = nullptr);
// Every entry's work server, by its entry's name.
std::vector<std::pair<std::string, WorkServer>> work_servers(const Registry& registry);
// Every entry's kernel function prefixes, each once.
std::vector<std::string> kernel_functions(const Registry& registry);
// The entry whose kernel functions a D-state wait is in (its wait channel, then its stack).
const BackendEntry* driver_waited_in(const std::optional<std::string>& wchan,
                                     const std::vector<std::string>& stack,
                                     const Registry* registry = nullptr);
// The work server of the backend named `name` (null: none).
const WorkServer* work_server_of(std::string_view name, const Registry* registry = nullptr);
// "{server}" and "{client}" of a WorkServer's command replaced by PIDs.
std::string fill_client(std::string text, pid_t server, pid_t client);
// "{gpu}" and "{minor}" of a word replaced; empty when it needs a minor the GPU lacks.
std::string fill_gpu(std::string text, unsigned gpu, std::optional<unsigned> minor = {});

}  // namespace gpureap::backend

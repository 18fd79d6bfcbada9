#include "cli/global_options.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "backend/registry.h"
#include "core/duration.h"
#include "output/ps_render.h"
#include "text/escape.h"

namespace gpureap::cli {

void add_global_options(CLI::App& app, GlobalOptions& o) {
  app.add_option("--proc-root", o.proc_root, "procfs to read (default /proc)")->group("Global");
  app.add_option("--dev-root", o.dev_root, "device directory to match (default /dev)")
      ->group("Global");
  app.add_option("--sys-root", o.sys_root,
                 "sysfs to read DRM GPUs, the drivers' device numbers and the cgroup filesystem "
                 "(fs/cgroup, whose "
                 "owners verify containers) from (default /sys)")
      ->group("Global");
  app.add_option("--kmsg", o.kmsg,
                 "kernel log to read GPU errors from: /dev/kmsg (default) or a saved copy "
                 "of it")
      ->group("Global");
  app.add_option("--runtime-root", o.runtime_root,
                 "folder holding the container runtimes' state (var/lib/docker, run/containerd, "
                 "var/log/pods), to verify and name containers and pods (default: the folder above "
                 "--proc-root, / for /proc)")
      ->group("Global");
  // Each backend's driver library, where its registry entry names an option for it.
  for (const auto& entry : backend::builtin_backends())
    if (entry.library)
      app.add_option("--" + entry.library->option, o.libraries[entry.name], entry.library->help)
          ->group("Global");
  app.add_flag("--json", o.json, "print JSON")->group("Global");
  app.add_flag("--csv", o.csv, "print CSV")->group("Global");
  app.add_option(
         "--driver-timeout", o.driver_timeout,
         "give up on a GPU driver that does not answer within this (default 5s); the output "
         "then comes from /proc alone and the exit status is 4")
      ->group("Global");
  app.add_flag("--no-color", o.no_color, "no colour (also NO_COLOR=1; colour only on a TTY)")
      ->group("Global");
}

void note_given_options(const CLI::App& app, GlobalOptions& o) {
  std::vector<std::string> names{"--proc-root", "--dev-root", "--sys-root", "--kmsg",
                                 "--runtime-root"};
  for (const auto& entry : backend::builtin_backends())
    if (entry.library) names.push_back("--" + entry.library->option);
  for (const auto& name : names)
    if (app.get_option(name)->count() > 0) o.roots_given = true;
  o.proc_root_given = app.get_option("--proc-root")->count() > 0;
}

backend::BackendSettings backend_settings(const GlobalOptions& o) {
  backend::BackendSettings settings;
  settings.proc_root = o.proc_root;
  settings.dev_root = o.dev_root;
  settings.sys_root = o.sys_root;
  settings.runtime_root = o.runtime_root;
  for (const auto& [name, path] : o.libraries)
    if (!path.empty()) settings.libraries[name] = path;
  if (auto proc = procfs::ProcFs::open(o.proc_root)) settings.pid_max = proc->pid_max();
  return settings;
}

namespace {

std::shared_ptr<backend::BackendSet> make_backends(const GlobalOptions& o) {
  auto timeout = core::parse_duration(o.driver_timeout);
  if (!timeout || timeout->count() <= 0) return nullptr;
  backend::WatchdogOptions watch;
  watch.timeout = *timeout;
  return backend::BackendSet::make(backend::builtin_backends(), backend_settings(o), watch);
}

}  // namespace

collect::Roots collector_roots(const GlobalOptions& o) {
  return {o.proc_root, o.dev_root, o.sys_root, o.kmsg, o.runtime_root};
}

core::Result<collect::Collector> open_collector(const GlobalOptions& o) {
  auto backends = make_backends(o);
  if (!backends)
    return core::Error{"--driver-timeout: \"" + o.driver_timeout + "\" is not a positive duration",
                       "write it with a unit: 500ms, 5s, 1m"};
  return collect::Collector::open(collector_roots(o), std::move(backends));
}

bool report_driver_timeout(const core::Snapshot& s) {
  auto lines = output::driver_timeout_lines(s);
  for (const auto& line : lines) std::cerr << line << "\n";
  return !lines.empty();
}

int fail(const core::Error& error) {
  // Messages echo what a user typed and what /proc said: escaped like any untrusted text.
  std::cerr << "gpureap: " << text::terminal_safe_lines(error.message) << "\n";
  if (!error.hint.empty()) std::cerr << "  " << text::terminal_safe_lines(error.hint) << "\n";
  return kExitUsage;
}

int fail_scope(const core::ScopeError& problem, int usage) {
  fail(problem.error);
  return problem.driver_down ? kExitDriverTimeout : usage;
}

std::optional<size_t> terminal_width() {
  winsize ws{};
  if (::isatty(STDOUT_FILENO) && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
    return ws.ws_col;
  return std::nullopt;
}

}  // namespace gpureap::cli

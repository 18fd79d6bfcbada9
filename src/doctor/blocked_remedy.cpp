#include "doctor/blocked_remedy.h"

#include <fmt/format.h>

#include <algorithm>

#include "backend/registry.h"
#include "doctor/evidence.h"
#include "kernel/blocked_task.h"
#include "text/escape.h"

namespace gpureap::doctor {
namespace {

const core::BlockedTask* task_of(const DoctorInput& in, pid_t pid) {
  for (const auto& t : in.blocked)
    if (t.pid == pid) return &t;
  return nullptr;
}

// The innermost frames, which say what it waits for.
std::string stack_text(const core::BlockedTask& t) {
  std::string out;
  for (size_t i = 0; i < t.stack.size() && i < 6; ++i)
    out += (out.empty() ? "" : " < ") + t.stack[i];
  return out;
}

void fuse(const core::BlockedTask& t, Finding& f) {
  // The connections with unanswered requests are the ones a dead daemon leaves.
  std::vector<const core::FuseConnection*> stuck;
  for (const auto& c : t.fuse)
    if (c.waiting.value_or(0) > 0) stuck.push_back(&c);
  if (stuck.empty())
    for (const auto& c : t.fuse) stuck.push_back(&c);
  for (const auto* c : stuck)
    f.evidence.push_back(fmt::format(
        "it waits on FUSE: {} ({} from {}), connection {}{}", c->mount_point, c->fs_type, c->source,
        c->id,
        c->waiting ? fmt::format(" with {} request(s) its daemon has not answered", *c->waiting)
                   : std::string()));
  f.explanation =
      "It waits for a FUSE file system's daemon to answer. If that daemon died or hangs, the "
      "wait never ends; aborting the connection fails every pending and later request on the "
      "mount with ENOTCONN, which wakes the process (the mount then must be unmounted and its "
      "daemon restarted).";
  for (const auto* c : stuck) {
    f.remedy.push_back(
        fmt::format("echo 1 > /sys/fs/fuse/connections/{}/abort   # fails the "
                    "requests pending on {}: the process wakes with an error",
                    c->id, c->mount_point));
    f.remedy.push_back(
        step(StepKind::Then, fmt::format("umount -l {}   # then restart its FUSE daemon",
                                         text::shell_quote(c->mount_point))));
  }
  if (stuck.empty())
    f.remedy.push_back(
        "ls /sys/fs/fuse/connections   # find the stuck connection; echo 1 > N/abort ends it");
}

void nfs(const core::BlockedTask& t, Finding& f) {
  for (const auto& m : t.nfs)
    f.evidence.push_back(
        fmt::format("it waits on NFS: {} ({} from server {})", m.mount_point, m.fs_type, m.server));
  f.explanation =
      "It waits for an NFS server that does not answer. A hard mount (the default) retries "
      "forever: the process wakes when the server is back, and not before.";
  for (const auto& m : t.nfs) {
    f.remedy.push_back(
        fmt::format("bring the NFS server {} back (or the network to it)", m.server));
    f.remedy.push_back(
        fmt::format("umount -f {}   # may release it when the server is gone for good",
                    text::shell_quote(m.mount_point)));
  }
  if (t.nfs.empty()) f.remedy.push_back("bring the NFS server back (mount -t nfs,nfs4 lists them)");
}

}  // namespace

void explain_blocked(const DoctorInput& in, const core::HostProcess& p, Finding& f) {
  const pid_t pid = p.stat.pid;
  const auto* backends = in.backends;
  const auto* t = task_of(in, pid);
  auto wchan = t && t->wchan ? t->wchan : p.details ? p.details->wchan : std::nullopt;
  const auto* before = in.first.find(pid);
  std::string seen;
  if (before && before->stat.state == 'D' && before->stat.start_ticks == p.stat.start_ticks) {
    auto apart = std::chrono::duration_cast<std::chrono::milliseconds>(in.last.timestamp -
                                                                       in.first.timestamp);
    seen = fmt::format(", in both samples ({:.1f} s apart): in D for at least that long",
                       apart.count() / 1000.0);
  }
  f.evidence.push_back(fmt::format("{} is in uninterruptible sleep (D){}{}", process_label(p),
                                   wchan ? " in " + *wchan : std::string(), seen));
  if (t && !t->stack.empty())
    f.evidence.push_back("its kernel stack: " + stack_text(*t));
  else if (t && t->stack_problem)
    f.evidence.push_back(*t->stack_problem);
  // Without the task's evidence (the daemon reads none), the wait channel alone still tells
  // what kind of wait it is, if not which mount.
  core::BlockedTask from_wchan;
  if (!t) {
    from_wchan.pid = pid;
    from_wchan.wchan = wchan;
    from_wchan.on = kernel::classify_wait(
        wchan, {}, backend::kernel_functions(backends ? *backends : backend::builtin_backends()));
    t = &from_wchan;
  }
  switch (t->on) {
    case core::BlockedOn::Fuse:
      fuse(*t, f);
      return;
    case core::BlockedOn::Nfs:
      nfs(*t, f);
      return;
    case core::BlockedOn::GpuDriver: {
      // The vendor whose kernel module it waits in words where to look.
      const auto* entry = backend::driver_waited_in(t->wchan, t->stack, backends);
      auto in_fn = entry ? kernel::first_function_of(t->wchan, t->stack, entry->kernel_functions)
                         : std::nullopt;
      f.evidence.push_back("it waits inside the GPU driver itself" +
                           (in_fn ? " (" + *in_fn + ")" : std::string()));
      f.explanation =
          "It is stuck in a call into the GPU driver. No signal acts until that call returns, and "
          "a driver that wedged does not return: only a reboot frees the process and its memory.";
      f.remedy.clear();
      if (entry && !entry->words.driver_log_grep.empty())
        f.remedy.push_back(entry->words.driver_log_grep + "   # shows the driver's errors");
      f.remedy.push_back({f.remedy.empty() ? StepKind::Run : StepKind::Then, "reboot",
                          "frees the process and its memory"});
      return;
    }
    case core::BlockedOn::Unknown:
      break;
  }
  f.explanation =
      "It waits inside the kernel (I/O, NFS, a driver call). No signal, not even SIGKILL, acts "
      "until that call returns.";
  f.remedy = {fmt::format("cat /proc/{}/stack   # shows where it waits (root)", pid),
              "dmesg | tail   # shows storage or driver errors",
              {StepKind::Then, "fix the I/O it waits on (e.g. the NFS server)",
               "the process wakes when it returns"},
              {StepKind::Or, "reboot", "if it never does"}};
}

}  // namespace gpureap::doctor

#include "reap/safety.h"

#include <unistd.h>

#include <algorithm>

namespace gpureap::reap {
namespace {

// TASK_COMM_LEN - 1: /proc/PID/stat shows at most this much of a process name.
constexpr size_t kCommLength = 15;

std::string_view basename(std::string_view path) {
  auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

bool matches(std::string_view name, std::string_view comm, std::string_view argv0) {
  if (comm == name) return true;
  if (comm.size() == kCommLength && name.size() > kCommLength && name.starts_with(comm)) return true;
  return !argv0.empty() && basename(argv0) == name;
}

std::string owner(const Target& t) {
  if (t.user) return *t.user;
  return t.uid ? "uid " + std::to_string(*t.uid) : "another user";
}

}  // namespace

const std::vector<std::string_view>& protected_names() {
  static const std::vector<std::string_view> names{
      "Xorg", "Xwayland", "gnome-shell", "kwin_wayland", "kwin_x11", "sway", "weston", "mutter",
      "gdm", "sddm", "lightdm", "nvidia-persistenced", "nv-hostengine", "dcgm-exporter", "dcgmi",
      "gpureap"};
  return names;
}

bool is_protected(std::string_view comm, const std::vector<std::string>& cmdline) {
  std::string_view argv0 = cmdline.empty() ? std::string_view() : std::string_view(cmdline.front());
  return std::any_of(protected_names().begin(), protected_names().end(),
                     [&](std::string_view name) { return matches(name, comm, argv0); });
}

void judge(Target& t, const core::HostProcess& p, const Caller& caller) {
  auto refuse = [&](Action action, std::string why) {
    t.action = action;
    t.refusal = std::move(why);
  };
  const auto& ancestors = caller.ancestors;
  if (t.pid == 1)
    return refuse(Action::Refused, "PID 1 (init) is never signalled");
  if (p.stat.is_kernel_thread())
    return refuse(Action::Refused, "a kernel thread is never signalled");
  if (t.pid == caller.self)
    return refuse(Action::Refused, "gpureap does not signal itself");
  if (std::find(ancestors.begin(), ancestors.end(), t.pid) != ancestors.end())
    return refuse(Action::Refused, "gpureap runs under it (an ancestor); it is never signalled");
  if (p.stat.is_zombie())
    return refuse(Action::Zombie, "a zombie has already exited; only its parent can reap it");
  if (!t.named() && is_protected(t.comm, t.cmdline))
    return refuse(Action::Refused,
                  "protected (display server or GPU management daemon); name its PID to kill it");
  if (!caller.privileged() && t.uid && *t.uid != caller.uid && *t.uid != caller.euid)
    return refuse(Action::NotPermitted,
                  "owned by " + owner(t) + "; only root or its owner may signal it");
  t.action = Action::Signal;
}

Caller current_caller(const core::Snapshot& snapshot) {
  Caller c;
  c.self = ::getpid();
  c.pgid = ::getpgrp();
  c.uid = ::getuid();
  c.euid = ::geteuid();
  c.ancestors.push_back(::getppid());
  const core::HostProcess* cur = snapshot.find(c.self);
  for (int depth = 0; cur && depth < 4096 && cur->stat.ppid > 0; ++depth) {
    if (std::find(c.ancestors.begin(), c.ancestors.end(), cur->stat.ppid) == c.ancestors.end())
      c.ancestors.push_back(cur->stat.ppid);
    cur = snapshot.find(cur->stat.ppid);
  }
  return c;
}

}  // namespace gpureap::reap

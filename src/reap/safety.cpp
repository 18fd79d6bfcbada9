#include "reap/safety.h"

#include <unistd.h>

#include <algorithm>

#include "backend/registry.h"

namespace gpureap::reap {
namespace {

// TASK_COMM_LEN - 1: /proc/PID/stat shows at most this much of a process name.
constexpr size_t kCommLength = 15;
// Below this, uids are the system's (Debian's FIRST_UID): daemons, not people.
constexpr uid_t kFirstUserUid = 1000;

std::string_view basename(std::string_view path) {
  auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

bool matches(std::string_view name, std::string_view comm, std::string_view argv0) {
  if (comm == name) return true;
  if (comm.size() == kCommLength && name.size() > kCommLength && name.starts_with(comm))
    return true;
  return !argv0.empty() && basename(argv0) == name;
}

std::string owner(const Target& t) {
  if (t.user) return *t.user;
  return t.uid ? "uid " + std::to_string(*t.uid) : "another user";
}

}  // namespace

const std::vector<std::string_view>& protected_names() {
  static const std::vector<std::string_view> names = [] {
    std::vector<std::string_view> out{"Xorg",     "Xwayland", "gnome-shell", "kwin_wayland",
                                      "kwin_x11", "sway",     "weston",      "mutter",
                                      "gdm",      "sddm",     "lightdm",     "gpureap"};
    // Each vendor's own daemons (persistence, monitoring), as its registry entry names them.
    for (const auto& entry : backend::builtin_backends())
      out.insert(out.end(), entry.protected_programs.begin(), entry.protected_programs.end());
    return out;
  }();
  return names;
}

bool is_protected(std::string_view comm, const core::ProcessDetails* details) {
  auto named = [](std::string_view file) {
    // Debian names GDM's binary gdm3.
    if (file == "gdm3") return true;
    return std::find(protected_names().begin(), protected_names().end(), file) !=
           protected_names().end();
  };
  // The program it runs decides: a system-installed file with a protected name. A name a user
  // gives a process (prctl, argv[0], a copy of a binary) protects nothing.
  if (details && details->exe)
    return details->exe->system_installed && named(basename(details->exe->path));
  // Its program could not be read (another user's process, without privilege): the name
  // counts only for a process that runs as root or a system account, which no user can forge.
  std::string_view argv0 =
      details && !details->cmdline.empty() ? std::string_view(details->cmdline.front()) : "";
  bool name_matches =
      std::any_of(protected_names().begin(), protected_names().end(),
                  [&](std::string_view name) { return matches(name, comm, argv0); });
  return name_matches && details && details->uid && *details->uid < kFirstUserUid;
}

bool is_protected_process(const core::HostProcess& p) {
  return is_protected(p.stat.comm, p.details ? &*p.details : nullptr);
}

void judge(Target& t, const core::HostProcess& p, const Caller& caller) {
  auto refuse = [&](Action action, std::string why) {
    t.action = action;
    t.refusal = std::move(why);
  };
  const auto& ancestors = caller.ancestors;
  if (t.pid == 1) return refuse(Action::Refused, "PID 1 (init) is never signalled");
  if (p.stat.is_kernel_thread())
    return refuse(Action::Refused, "a kernel thread is never signalled");
  if (t.pid == caller.self) return refuse(Action::Refused, "gpureap does not signal itself");
  if (std::find(ancestors.begin(), ancestors.end(), t.pid) != ancestors.end())
    return refuse(Action::Refused, "gpureap runs under it (an ancestor); it is never signalled");
  if (p.stat.is_zombie())
    return refuse(Action::Zombie, "a zombie has already exited; only its parent can reap it");
  if (!t.named() && t.protected_process)
    return refuse(Action::Refused,
                  "protected (display server or GPU management daemon); name its PID to kill it");
  if (!caller.privileged() && t.uid && *t.uid != caller.uid && *t.uid != caller.euid)
    return refuse(Action::NotPermitted,
                  "owned by " + owner(t) + "; only root or its owner may signal it");
  t.action = Action::Signal;
}

namespace {

// gpureap's parent, then each one's parent as `parent_of` tells it, up to PID 1.
template <class ParentOf>
std::vector<pid_t> ancestors_by(ParentOf parent_of) {
  std::vector<pid_t> out{::getppid()};
  for (int depth = 0; depth < 4096 && out.back() > 1; ++depth) {
    std::optional<pid_t> parent = parent_of(out.back());
    if (!parent || *parent <= 0) break;
    if (std::find(out.begin(), out.end(), *parent) != out.end()) break;  // a corrupt view
    out.push_back(*parent);
  }
  return out;
}

}  // namespace

std::vector<pid_t> own_ancestors(const ProcessProbe& proc) {
  return ancestors_by([&](pid_t pid) -> std::optional<pid_t> {
    auto st = proc.stat(pid);
    if (!st.ok() || !*st) return std::nullopt;
    return (*st)->ppid;
  });
}

std::vector<pid_t> own_ancestors(const core::Snapshot& snapshot) {
  return ancestors_by([&](pid_t pid) -> std::optional<pid_t> {
    const core::HostProcess* p = snapshot.find(pid);
    if (!p) return std::nullopt;
    return p->stat.ppid;
  });
}

Caller current_caller(const ProcessProbe& proc) {
  Caller c;
  c.self = ::getpid();
  c.pgid = ::getpgrp();
  c.uid = ::getuid();
  c.euid = ::geteuid();
  c.ancestors = own_ancestors(proc);
  return c;
}

}  // namespace gpureap::reap

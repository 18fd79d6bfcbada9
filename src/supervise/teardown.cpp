#include "supervise/teardown.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>

#include "procfs/thread_group.h"
#include "reap/pidfd.h"

namespace gpureap::supervise {

bool signal_member(const procfs::ProcFs& proc, const core::ProcessStat& who, int signal) {
  // Never gpureap itself or an init: neither can be a job process, but a torn /proc read
  // must not make it one.
  if (who.pid <= 1 || who.pid == ::getpid()) return false;
  auto handle = reap::Pidfd::open(who.pid);
  if (handle.status() == reap::Pidfd::Status::Gone) return false;
  // With a pidfd this check is race-free: the handle cannot follow a recycled PID. Without
  // one (kernels before 5.3) a tiny window remains between the check and kill().
  auto now = proc.read_stat(who.pid);
  if (!now || !*now || (*now)->start_ticks != who.start_ticks || !is_alive(**now)) return false;
  // The kernel opens a pidfd for a process alone; without one the number may name a thread now
  // (/proc/TID/stat answers for it), and kill() by a thread's id reaches its whole process.
  if (handle.status() != reap::Pidfd::Status::Opened &&
      procfs::thread_group_of(proc.dirfd(), who.pid))
    return false;
  return handle.send_signal(signal) == 0;
}

void Teardown::note_devices(const core::Snapshot& snapshot) {
  for (const auto& p : snapshot.proc.processes) {
    if (!p.holds_device()) continue;
    auto& paths = devices_[{p.stat.pid, p.stat.start_ticks}];
    paths.clear();
    for (const auto& d : p.devices) paths.push_back(d.path);
  }
}

core::Result<std::vector<core::ProcessStat>> Teardown::scan() {
  auto all = read_all_stats(proc_);
  if (!all) return all.error();
  return members_.observe(*all);
}

Leftover Teardown::new_record(const core::ProcessStat& st) const {
  Leftover l;
  l.pid = st.pid;
  l.comm = st.comm;
  auto details = proc_.read_details(st.pid, false);
  if (details.details) l.cmdline = details.details->cmdline;
  if (auto it = devices_.find({st.pid, st.start_ticks}); it != devices_.end())
    l.devices = it->second;
  return l;
}

Leftover& Teardown::record(const core::ProcessStat& st) {
  Key key{st.pid, st.start_ticks};
  auto it = ended_.find(key);
  if (it == ended_.end()) it = ended_.emplace(key, new_record(st)).first;
  return it->second;
}

void Teardown::terminate(const std::vector<core::ProcessStat>& live) {
  for (const auto& st : live) {
    Key key{st.pid, st.start_ticks};
    if (asked_.count(key)) continue;
    asked_[key] = true;
    bool is_command = st.pid == command_pid_;
    if (!is_command) record(st);  // before the signal: its command line is still readable
    if (signal_member(proc_, st, SIGTERM)) {
      signal_member(proc_, st, SIGCONT);
      if (!is_command) {
        auto& l = record(st);
        l.signals.push_back(SIGTERM);
        l.signals.push_back(SIGCONT);
      }
    }
  }
}

void Teardown::kill(const std::vector<core::ProcessStat>& live, bool command_unreaped) {
  for (const auto& st : live) {
    bool is_command = st.pid == command_pid_;
    if (!is_command) record(st);
    if (signal_member(proc_, st, SIGKILL) && !is_command) {
      auto& sent = record(st).signals;
      if (sent.empty() || sent.back() != SIGKILL) sent.push_back(SIGKILL);
    }
  }
  if (command_unreaped) ::kill(-command_pid_, SIGKILL);
}

std::vector<Leftover> Teardown::leftovers(const std::vector<core::ProcessStat>& live) const {
  std::vector<Leftover> out;
  for (const auto& [identity, l] : ended_) {
    Leftover copy = l;
    const auto& key = identity;  // a structured binding is not captured by every compiler
    copy.ended = std::none_of(live.begin(), live.end(), [&key](const core::ProcessStat& st) {
      return st.pid == key.first && st.start_ticks == key.second;
    });
    out.push_back(std::move(copy));
  }
  return out;
}

std::vector<Leftover> Teardown::describe(const std::vector<core::ProcessStat>& live) const {
  std::vector<Leftover> out;
  for (const auto& st : live)
    if (st.pid != command_pid_) out.push_back(new_record(st));
  return out;
}

}  // namespace gpureap::supervise

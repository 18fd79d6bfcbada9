#include "procfs/open_files.h"

#include <linux/kcmp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <tuple>

#include "procfs/thread_group.h"

namespace gpureap::procfs {
namespace {

struct FdRef {
  pid_t pid;
  pid_t thread;  // DeviceHold::thread: a thread's own table, or 0 for the process's
  int fd;
  pid_t task;  // whose fd table kcmp reads: the process, its live thread, or `thread`

  // The fd within its process: which table, which number.
  std::tuple<pid_t, pid_t, int> key() const { return {pid, thread, fd}; }
};

enum class Order { Same, Before, After, Unordered, Failed };

struct Comparer {
  size_t calls = 0;
  int last_errno = 0;

  // The kernel orders open files by their (obfuscated) addresses, consistently within a boot:
  // that makes a binary search over one representative per open file possible.
  Order compare(const FdRef& a, const FdRef& b) {
    ++calls;
    long r = ::syscall(SYS_kcmp, a.task, b.task, KCMP_FILE, a.fd, b.fd);
    switch (r) {
      case 0:
        return Order::Same;
      case 1:
        return Order::Before;
      case 2:
        return Order::After;
      case 3:
        return Order::Unordered;
      default:
        last_errno = errno;
        return Order::Failed;
    }
  }
};

struct Group {
  FdRef rep;
  std::string id;
};

// One device file's fds, in PID then fd order: the first fd of each open file names it.
// Returns each fd's id (empty when kcmp failed for it).
std::vector<std::string> group_fds(const std::vector<FdRef>& fds, Comparer& cmp, bool& failed) {
  std::vector<Group> groups;  // sorted by the kernel's order of their open files
  std::vector<std::string> ids;
  for (const auto& f : fds) {
    size_t lo = 0, hi = groups.size();
    std::optional<size_t> same;
    bool unordered = false, broken = false;
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      Order o = cmp.compare(f, groups[mid].rep);
      if (o == Order::Same) {
        same = mid;
        break;
      }
      if (o == Order::Before)
        hi = mid;
      else if (o == Order::After)
        lo = mid + 1;
      else {
        unordered = o == Order::Unordered;
        broken = o == Order::Failed;
        break;
      }
    }
    if (unordered) {  // no order from this kernel: compare with every group
      for (size_t i = 0; i < groups.size() && !same && !broken; ++i) {
        Order o = cmp.compare(f, groups[i].rep);
        if (o == Order::Same) same = i;
        broken = o == Order::Failed;
      }
      lo = groups.size();
    }
    if (broken) {
      failed = true;
      ids.emplace_back();
      continue;
    }
    if (same) {
      ids.push_back(groups[*same].id);
      continue;
    }
    // A new representative must be a live fd (compared with itself), or every later fd
    // compared with it would fail: the process may have exited since the scan.
    if (cmp.compare(f, f) != Order::Same) {
      failed = true;
      ids.emplace_back();
      continue;
    }
    // A thread's own table is named by its thread id, which no other task has either.
    Group g{f, std::to_string(f.thread ? f.thread : f.pid) + ":" + std::to_string(f.fd)};
    ids.push_back(g.id);
    groups.insert(groups.begin() + static_cast<long>(lo), std::move(g));
  }
  return ids;
}

std::string why_failed(int err) {
  switch (err) {
    case ENOSYS:
      return "this kernel has no kcmp (CONFIG_KCMP)";
    case EPERM:
    case EACCES:
      return "kcmp was refused (it needs root or CAP_SYS_PTRACE over the holders)";
    default:
      return std::string("kcmp failed: ") + std::strerror(err);
  }
}

}  // namespace

bool is_gpu_file(const core::DeviceHold& hold) {
  return hold.gpu_file;
}

OpenFileGrouping group_open_files(std::vector<core::HostProcess>& processes, bool live,
                                  int proc_dirfd) {
  OpenFileGrouping out;
  std::map<std::string, std::vector<FdRef>> by_path;
  for (const auto& p : processes) {
    pid_t task = p.stat.pid;
    bool resolved = false;  // the task is looked up once per process, and only for holders
    for (const auto& h : p.devices) {
      if (!is_gpu_file(h)) continue;
      if (!resolved && live && proc_dirfd >= 0 && p.is_live() && p.stat.leader_exited)
        if (auto t = live_thread(proc_dirfd, p.stat.pid)) task = t->tid;
      resolved = true;
      for (int fd : h.fds)
        by_path[h.path].push_back({p.stat.pid, h.thread, fd, h.thread ? h.thread : task});
    }
  }
  if (by_path.empty()) return out;
  if (!live) {
    out.incomplete =
        "the procfs does not name gpureap's own processes, so open files cannot be compared";
    return out;
  }
  Comparer cmp;
  bool failed = false;
  std::map<std::string, std::map<std::tuple<pid_t, pid_t, int>, std::string>> ids_by_path;
  for (auto& [path, fds] : by_path) {
    std::sort(fds.begin(), fds.end(),
              [](const FdRef& a, const FdRef& b) { return a.key() < b.key(); });
    auto ids = group_fds(fds, cmp, failed);
    auto& m = ids_by_path[path];
    for (size_t i = 0; i < fds.size(); ++i) m[fds[i].key()] = ids[i];
  }
  out.comparisons = cmp.calls;
  // A process vanishing meanwhile is normal (its fds fail with ESRCH/EBADF); anything else
  // means kcmp cannot be trusted here.
  if (failed && cmp.last_errno != ESRCH && cmp.last_errno != EBADF)
    out.incomplete = why_failed(cmp.last_errno);

  for (auto& p : processes) {
    std::vector<core::DeviceHold> split;
    for (auto& h : p.devices) {
      if (!is_gpu_file(h)) {
        split.push_back(std::move(h));
        continue;
      }
      const auto& m = ids_by_path[h.path];
      std::map<std::string, core::DeviceHold> parts;  // by id; "" = unknown
      for (int fd : h.fds) {
        auto it = m.find({p.stat.pid, h.thread, fd});
        std::string id = it == m.end() ? std::string() : it->second;
        auto [slot, fresh] = parts.try_emplace(
            id, core::DeviceHold{h.path, h.kind, h.device, h.gpu_file, {}, {}, h.thread});
        if (fresh && !id.empty()) slot->second.open_file = id;
        slot->second.fds.push_back(fd);
      }
      for (auto& [id, part] : parts) split.push_back(std::move(part));
    }
    std::stable_sort(split.begin(), split.end(),
                     [](const core::DeviceHold& a, const core::DeviceHold& b) {
                       return std::tie(a.path, a.thread, a.fds.front()) <
                              std::tie(b.path, b.thread, b.fds.front());
                     });
    p.devices = std::move(split);
  }
  return out;
}

}  // namespace gpureap::procfs

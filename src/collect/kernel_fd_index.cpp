#include "collect/kernel_fd_index.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string>

namespace gpureap::collect {
namespace {

constexpr uint64_t kNanosPerSecond = 1'000'000'000;

// The catalogue's files, each opened with O_PATH for as long as the pass runs.
class Probes {
 public:
  Probes() = default;
  Probes(const Probes&) = delete;
  ~Probes() {
    for (const auto& p : fds_) ::close(p.fd);
  }
  struct Probe {
    int fd;
    const procfs::GpuDeviceFile* file;  // null: this process's program
    struct stat st;
  };
  core::Result<bool> open(const procfs::DeviceCatalog& catalog) {
    // This process's own program too, so that a pass is checked even where no GPU file is.
    if (auto self = add("/proc/self/exe", nullptr); !self) return self;
    for (const auto& f : catalog.files())
      if (auto probe = add(f.path, &f); !probe) return probe;
    return true;
  }
  const std::vector<Probe>& all() const { return fds_; }

 private:
  // Followed as the catalogue's stat followed it.
  core::Result<bool> add(const std::string& path, const procfs::GpuDeviceFile* file) {
    int fd = ::open(path.c_str(), O_PATH | O_CLOEXEC);
    if (fd < 0)
      return core::Error{
          "cannot open " + path + " to check the open-file iterator: " + std::strerror(errno), "",
          errno};
    fds_.push_back({fd, file, {}});
    if (::fstat(fd, &fds_.back().st) != 0)
      return core::Error{"cannot stat " + path + ": " + std::strerror(errno), ""};
    return true;
  }
  std::vector<Probe> fds_;
};

// A stand-in (not a device node) as the kernel knows it, and as stat and the catalogue do.
struct KernelId {
  dev_t sb_dev;
  uint64_t ino;
  const struct stat* st;
};

}  // namespace

core::Result<KernelFdIndex> KernelFdIndex::read(const kernel::OpenFileIterator& iterator,
                                                const procfs::DeviceCatalog& catalog,
                                                long ticks_per_second) {
  Probes probes;
  if (auto opened = probes.open(catalog); !opened) return opened.error();
  // A stand-in is known by the kernel's numbers, which this process's own probe records give
  // only once the pass reaches it: until then the records that may be one are kept aside, those
  // with a stand-in's inode number (the check below makes sure the kernel's and stat's agree).
  // Nothing else is kept: what a pass holds is one entry per process and the GPU files' fds,
  // however many other fds the processes open.
  std::vector<uint64_t> stand_in_inodes;
  for (const auto& probe : probes.all())
    if (probe.file && !S_ISCHR(probe.st.st_mode)) stand_in_inodes.push_back(probe.st.st_ino);
  const pid_t self = ::getpid();
  const uint64_t nanos_per_tick = kNanosPerSecond / static_cast<uint64_t>(ticks_per_second);
  KernelFdIndex index;
  std::vector<kernel::OpenFileRecord> mine, maybe_stand_ins;
  Entry* e = nullptr;
  pid_t at = 0;
  auto pass = iterator.for_each([&](const kernel::OpenFileRecord& r) {
    // A process's records come together, but for a thread with a table of its own, which the
    // kernel walks in thread-id order: such a record looks its entry up again.
    if (!e || r.tgid != at) {
      at = r.tgid;
      e = &index.by_pid_[r.tgid];
      e->start_ticks = r.start_ns / nanos_per_tick;
    }
    if (r.tgid == self) mine.push_back(r);
    if (r.flags & O_PATH) return;  // names a file, opens nothing (as the /proc scan reads it)
    if (S_ISCHR(r.mode)) {
      struct stat st {};
      st.st_mode = r.mode;
      st.st_rdev = r.rdev;
      if (catalog.match(st)) e->hold(r);
    } else if (std::find(stand_in_inodes.begin(), stand_in_inodes.end(), r.ino) !=
               stand_in_inodes.end()) {
      maybe_stand_ins.push_back(r);
    }
  });
  if (!pass) return pass.error();

  // This process's own records of the probes: each must be there with the type (a node's
  // number, a file's inode number) stat gives, else the pass is not what it claims.
  std::vector<KernelId> stand_ins;
  for (const auto& probe : probes.all()) {
    auto own =
        std::find_if(mine.begin(), mine.end(), [&](const auto& r) { return r.fd == probe.fd; });
    const bool chr = S_ISCHR(probe.st.st_mode);
    if (own == mine.end() || (own->mode & S_IFMT) != (probe.st.st_mode & S_IFMT) ||
        (chr && own->rdev != probe.st.st_rdev) || (!chr && own->ino != probe.st.st_ino) ||
        !(own->flags & O_PATH))
      return core::Error{"the open-file iterator misread this process's open files", ""};
    if (probe.file && !chr) stand_ins.push_back({own->sb_dev, own->ino, &probe.st});
  }
  for (const auto& r : maybe_stand_ins) {
    auto id = std::find_if(stand_ins.begin(), stand_ins.end(), [&](const KernelId& k) {
      return k.sb_dev == r.sb_dev && k.ino == r.ino;
    });
    if (id == stand_ins.end()) continue;
    struct stat st {};
    st.st_mode = r.mode;
    st.st_dev = id->st->st_dev;
    st.st_ino = id->st->st_ino;
    if (catalog.match(st)) index.by_pid_[r.tgid].hold(r);
  }
  for (auto& [pid, entry] : index.by_pid_) {
    std::sort(entry.fds.begin(), entry.fds.end());
    entry.fds.erase(std::unique(entry.fds.begin(), entry.fds.end()), entry.fds.end());
  }
  return index;
}

void KernelFdIndex::Entry::hold(const kernel::OpenFileRecord& r) {
  if (r.tid == r.tgid)
    fds.push_back(r.fd);
  else
    thread_holds = true;
}

const std::vector<int>* KernelFdIndex::gpu_fds(pid_t pid, uint64_t start_ticks) const {
  auto it = by_pid_.find(pid);
  if (it == by_pid_.end() || it->second.start_ticks != start_ticks) return nullptr;
  return &it->second.fds;
}

bool KernelFdIndex::thread_holds(pid_t pid, uint64_t start_ticks) const {
  auto it = by_pid_.find(pid);
  return it != by_pid_.end() && it->second.start_ticks == start_ticks && it->second.thread_holds;
}

}  // namespace gpureap::collect

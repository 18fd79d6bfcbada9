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
    const procfs::GpuDeviceFile* file;  // null: the dev root
    struct stat st;
  };
  core::Result<bool> open(const procfs::DeviceCatalog& catalog) {
    // The dev root too, so that a pass is checked even where no GPU file is there.
    if (auto root = add(catalog.dev_root(), nullptr); !root) return root;
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
          "cannot open " + path + " to check the open-file iterator: " + std::strerror(errno), ""};
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

// What the catalogue matches: a node by its number, a stand-in by the device and inode stat
// gave it (found through the kernel's own numbers). Null: it can be no GPU file.
std::optional<struct stat> as_stat(const kernel::OpenFileRecord& r,
                                   const std::vector<KernelId>& stand_ins) {
  struct stat st {};
  st.st_mode = r.mode;
  if (S_ISCHR(r.mode)) {
    st.st_rdev = r.rdev;
    return st;
  }
  for (const auto& id : stand_ins)
    if (id.sb_dev == r.sb_dev && id.ino == r.ino) {
      st.st_dev = id.st->st_dev;
      st.st_ino = id.st->st_ino;
      return st;
    }
  return std::nullopt;
}

}  // namespace

core::Result<KernelFdIndex> KernelFdIndex::read(const kernel::OpenFileIterator& iterator,
                                                const procfs::DeviceCatalog& catalog,
                                                long ticks_per_second) {
  Probes probes;
  if (auto opened = probes.open(catalog); !opened) return opened.error();
  auto records = iterator.read_all();
  if (!records) return records.error();

  // This process's own records of the probes: each must be there with the type (and a node's
  // number) stat gives, else the pass is not what it claims.
  const pid_t self = ::getpid();
  std::vector<KernelId> stand_ins;
  for (const auto& probe : probes.all()) {
    auto mine = std::find_if(records->begin(), records->end(),
                             [&](const auto& r) { return r.tgid == self && r.fd == probe.fd; });
    const bool chr = S_ISCHR(probe.st.st_mode);
    if (mine == records->end() || (mine->mode & S_IFMT) != (probe.st.st_mode & S_IFMT) ||
        (chr && mine->rdev != probe.st.st_rdev) || !(mine->flags & O_PATH))
      return core::Error{"the open-file iterator misread this process's open files", ""};
    if (probe.file && !chr) stand_ins.push_back({mine->sb_dev, mine->ino, &probe.st});
  }

  KernelFdIndex index;
  const uint64_t nanos_per_tick = kNanosPerSecond / static_cast<uint64_t>(ticks_per_second);
  Entry* e = nullptr;
  pid_t at = 0;
  for (const auto& r : *records) {
    if (!e || r.tgid != at) {  // a process's records come together
      at = r.tgid;
      e = &index.by_pid_[r.tgid];
      e->start_ticks = r.start_ns / nanos_per_tick;
    }
    if (r.flags & O_PATH) continue;  // names a file, opens nothing (as the /proc scan reads it)
    auto st = as_stat(r, stand_ins);
    if (st && catalog.match(*st)) e->fds.push_back(r.fd);
  }
  for (auto& [pid, e] : index.by_pid_) {
    std::sort(e.fds.begin(), e.fds.end());
    e.fds.erase(std::unique(e.fds.begin(), e.fds.end()), e.fds.end());
  }
  return index;
}

const std::vector<int>* KernelFdIndex::gpu_fds(pid_t pid, uint64_t start_ticks) const {
  auto it = by_pid_.find(pid);
  if (it == by_pid_.end() || it->second.start_ticks != start_ticks) return nullptr;
  return &it->second.fds;
}

}  // namespace gpureap::collect
